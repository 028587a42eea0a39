"""Where a run's results live and what it records: model folders, finished keys, run records.

Results: `<out>/<benchmark>/model=<slug>/setup=<setup>/part-<hash>.parquet`. Every shard is
written atomically and named by the hash of its request keys, so a run that is killed at any
point and started again skips the finished keys and ends with exactly the rows of an
uninterrupted run: a rewritten batch lands on the same name, never beside it.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import re
import secrets
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from store.atomic import Guard, sweep_temporaries, write_bytes_atomic
from store.run_lock import writing_allowed
from store.shards import ERROR_COLUMN, read_shards
from store.storage import Location

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
    """A model's results folder: `<out>/<benchmark>/model=<slug>`."""
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
    (see store.shards), so their keys are not finished and get recomputed."""
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


def run_guard(folder: Location, token: str | None) -> Guard | None:
    """What a shard writer of the run holding `token` checks before each rename (None: no
    check, for writers outside a locked run)."""
    if token is None:
        return None
    return functools.partial(writing_allowed, folder, token)


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
    """Installed versions of PACKAGES for a run record (None: not installed)."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def write_run_record(root: Location, record: dict[str, Any]) -> Location:
    """One JSON file per invocation, so a resumed run keeps the record of the first.

    Named by start time (sortable), process and a random tag: two runs of one process in one
    second (a test, a sweep worker) wrote the same name, and the second replaced the first.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = root / "runs" / f"{stamp}-{os.getpid()}-{secrets.token_hex(4)}.json"
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
