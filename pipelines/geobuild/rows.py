"""GeoBuild result rows: the schema, the atomic round-shard writer, and round readers.

`<out>/geobuild/model=<slug>/round=<k>/part-<hash>.parquet`: one row per problem and round.
A shard is named by the hash of its request keys, so a batch rewritten after a kill lands on
the same name, never beside it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from actors.contract import ENGINE_OUTPUT, plain
from actors.dsl_executor import JUDGED
from store.atomic import write_parquet_atomic
from store.records import finished_keys, null_if_nan, run_guard
from store.shards import read_shards
from store.storage import Location, location

RESULT_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),
        ("round", pa.int64()),
        ("category", pa.string()),
        ("difficulty", pa.int64()),
        ("model", pa.string()),
        ("revision", pa.string()),
        ("engine", pa.string()),
        ("feedback_mode", pa.string()),
        ("sampling_params", pa.string()),  # JSON text
        ("request_key", pa.string()),
        ("messages_json", pa.string()),  # the prompt messages, images by sha256
    ]
    + list(ENGINE_OUTPUT)
    + list(JUDGED)
)
# Result columns added after results were first written: a shard without them is read with
# them null (not quarantined), so a run started before they existed resumes.
ADDED_LATER = (
    "error_category_public",
    "success_public",
    "object_score_public",
    "condition_score_public",
    "data_errors",
    "prompt_ids_sha256",
)


def round_dir(root: Location, round_number: int) -> Location:
    """The folder of one round's shards."""
    return root / f"round={round_number}"


def finished_problems(root: Location, round_number: int) -> set[str]:
    """Problem ids a round already holds (after sweeping a killed writer's temporaries)."""
    return finished_keys(round_dir(root, round_number), column="problem_id")


def read_round(root: Location, round_number: int, with_images: bool = False) -> pl.DataFrame:
    """Every row of a round (figure bytes only when asked for), one per request key;
    unreadable shards are quarantined with a warning (store.shards)."""
    columns = [n for n in RESULT_SCHEMA.names if with_images or n != "feedback_image"]
    required = [n for n in columns if n not in ADDED_LATER]
    optional = [n for n in columns if n in ADDED_LATER]
    frame = read_shards(round_dir(root, round_number), required, optional=optional)
    if frame is None:
        empty = pl.from_arrow(RESULT_SCHEMA.empty_table().select(columns))
        assert isinstance(empty, pl.DataFrame)
        frame = empty
    return frame.sort("problem_id")


class RoundWriter:
    """Writes a round's rows as atomic shards named by their request keys: the loop's driver
    converts each batch (`rows`) and writes shards of held rows (`write_rows`); calling it
    writes a batch as one shard."""

    def __init__(
        self,
        directory: str,
        constants: dict[str, Any],
        lock_folder: str | None = None,
        token: str | None = None,
    ) -> None:
        self.directory = location(directory)
        self.constants = constants
        # With the run's lock token, a late batch of a dead run writes nothing (run_lock).
        self.guard = run_guard(location(lock_folder), token) if lock_folder else None

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Write the batch as one shard; how many rows were written (0 for a dead run's)."""
        return {"rows": np.array([self.write_rows(self.rows(batch))], dtype=np.int64)}

    def rows(self, batch: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        """The batch's conversations as the shard's rows."""
        rows = []
        for i in range(len(batch["problem_id"])):
            row = {
                name: null_if_nan(plain(batch[name][i]))
                for name in RESULT_SCHEMA.names
                if name in batch
            }
            row.update(self.constants)
            row["sampling_params"] = json.dumps(plain(batch["sampling_params"][i]), sort_keys=True)
            rows.append(row)
        return rows

    def write_rows(self, rows: list[dict[str, Any]]) -> int:
        """Write the rows as one shard named by their request keys; the rows written (0 for
        a dead run's)."""
        if not rows:
            return 0
        keys = sorted(str(r["request_key"]) for r in rows)
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:24]
        table = pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)
        written = write_parquet_atomic(self.directory / f"part-{name}.parquet", table, self.guard)
        return len(rows) if written else 0
