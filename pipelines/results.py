"""Result shards: `<out>/<benchmark>/model=<slug>/setup=<setup>/part-<hash>.parquet`.

Every shard is written atomically and named by the hash of its request keys, so a run that
is killed at any point and started again skips the finished keys and ends with exactly the
rows of an uninterrupted run: a rewritten batch lands on the same name, never beside it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections import defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from actors.contract import plain
from geometry.item import ITEM_SCHEMA
from pipelines.atomic import Guard, sweep_temporaries, write_bytes_atomic, write_parquet_atomic
from pipelines.run_lock import writing_allowed
from pipelines.scoring import SCORE_FIELDS
from pipelines.shards import ERROR_COLUMN, read_shards
from pipelines.storage import Location, location

# The item columns (images aside: the item table keeps them), then the run's own.
RESULT_SCHEMA = pa.schema(
    [f for f in ITEM_SCHEMA if f.name != "image"]
    + [
        ("model", pa.string()),
        ("revision", pa.string()),
        ("engine", pa.string()),
        ("sampling_params", pa.string()),  # JSON text, grammar included
        ("request_key", pa.string()),
        ("generated_text", pa.string()),
    ]
    + list(SCORE_FIELDS)
    + [
        ("num_input_tokens", pa.int64()),
        ("num_generated_tokens", pa.int64()),
        ("time_taken_llm", pa.float64()),
        ("engine_error", pa.string()),
    ]
)
PACKAGES = (
    "numpy",
    "pyarrow",
    "polars",
    "ray",
    "torch",
    "transformers",
    "xgrammar",
    "vllm",
    "open_clip_torch",
    "pillow",
)


def model_slug(model: str) -> str:
    """A directory-safe name for a model ID or path (`org/name` -> `org__name`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model.strip("/").replace("/", "__")) or "model"


def model_dir(out: Location, benchmark: str, model: str) -> Location:
    return out / benchmark / f"model={model_slug(model)}"


# Which rows with an `engine_error` a rerun sends again (evaluate --retry-errors):
# "transient" those whose error is tagged transient (429, 5xx, timeouts, connection errors;
# actors/http_engine.py), "all" every error row, "none" no error row.
RETRY_ERRORS = ("transient", "all", "none")
TRANSIENT_PREFIX = "transient:"


def is_transient(error: str | None) -> bool:
    """Whether an `engine_error` is one a later run may not get: tagged `transient:`.

    Errors without a tag (engines that do not classify theirs, e.g. vLLM's) count as final,
    so a rerun does not loop on them unless asked with retry="all".
    """
    return error is not None and error.startswith(TRANSIENT_PREFIX)


def finished_keys(
    root: Location, column: str = "request_key", retry: str = "transient"
) -> set[str]:
    """Values of `column` already written under `root` (request keys by default), after
    sweeping a killed run's temporaries.

    Engine errors are not answers: a key whose only rows are errors that `retry` (one of
    RETRY_ERRORS) selects is not finished, so the next run sends it again, and the shard
    reader keeps the answered row over the old error row. Unreadable shards are quarantined
    (see pipelines.shards), so their keys are not finished and get recomputed."""
    if retry not in RETRY_ERRORS:
        raise ValueError(f"retry={retry!r}: choose one of {', '.join(RETRY_ERRORS)}")
    if not root.exists():
        return set()
    sweep_temporaries(root)
    rows = read_shards(root, [column], key=None, optional=[ERROR_COLUMN])
    if rows is None:
        return set()
    if retry == "none":
        return set(rows[column].to_list())
    errors = rows[ERROR_COLUMN].to_list()
    keys = rows[column].to_list()
    if retry == "all":
        return {k for k, e in zip(keys, errors, strict=True) if e is None}
    return {k for k, e in zip(keys, errors, strict=True) if not is_transient(e)}


def null_if_nan(value: Any) -> Any:
    """Ray's numpy batches carry a missing value of an all-null column as NaN."""
    return None if isinstance(value, float) and math.isnan(value) else value


def restore_types(batch: pa.Table) -> pa.Table:
    """Ray Data step (pyarrow, one block at a time) after an engine: result columns back to
    their schema types.

    Engines see numpy batches, where a block's all-null string column arrives as a float
    array of NaN; passed through, it would make the block's schema clash with its
    neighbours' when Ray concatenates them.
    """
    for field in RESULT_SCHEMA:
        if field.name not in batch.column_names or field.name == "sampling_params":
            continue
        column = batch.column(field.name)
        if column.type != field.type:
            values = [null_if_nan(plain(v)) for v in column.to_pylist()]
            index = batch.column_names.index(field.name)
            batch = batch.set_column(index, field.name, pa.array(values, field.type))
    return batch


def run_guard(folder: Location, token: str | None) -> Guard | None:
    """What a shard writer of the run holding `token` checks before each rename (None: no
    check, for writers outside a locked run)."""
    if token is None:
        return None
    return functools.partial(writing_allowed, folder, token)


class ShardWriter:
    """Ray Data step (pyarrow batches): writes each batch, one shard per setup.

    With the run's lock `token`, a shard is written only while that run still holds the
    model folder's lock (pipelines.run_lock): a late batch of a dead run writes nothing."""

    def __init__(self, root: str, model: str, revision: str, engine: str, token: str | None = None):
        self.root = location(root)
        self.constants = {"model": model, "revision": revision, "engine": engine}
        self.guard = run_guard(self.root, token)

    def __call__(self, batch: pa.Table) -> dict[str, np.ndarray]:
        rows_by_setup: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in batch.to_pylist():
            row = {name: row.get(name) for name in RESULT_SCHEMA.names} | self.constants
            row["sampling_params"] = json.dumps(plain(row["sampling_params"]), sort_keys=True)
            rows_by_setup[str(row["setup"])].append(row)
        written = 0
        for setup, rows in rows_by_setup.items():
            keys = sorted(r["request_key"] for r in rows)
            name = hashlib.sha256("".join(keys).encode()).hexdigest()[:24]
            table = pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)
            path = self.root / f"setup={setup}" / f"part-{name}.parquet"
            if write_parquet_atomic(path, table, self.guard):
                written += len(rows)
        return {"rows": np.array([written], dtype=np.int64)}


# A job submitted to a cluster travels without .git; scripts/sweep_submit.sh passes the
# submitting checkout's commit in this variable instead.
GIT_COMMIT_ENV = "GEOSEE_GIT_COMMIT"


def _git_commit() -> str | None:
    if os.environ.get(GIT_COMMIT_ENV):
        return os.environ[GIT_COMMIT_ENV]
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def write_run_record(root: Location, record: dict[str, Any]) -> Location:
    """One JSON file per invocation, so a resumed run keeps the record of the first."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = root / "runs" / f"{stamp}-{os.getpid()}.json"
    full = {
        **record,
        "git_commit": _git_commit(),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "started_utc": stamp,
    }
    write_bytes_atomic(path, (json.dumps(full, indent=2, sort_keys=True) + "\n").encode())
    return path
