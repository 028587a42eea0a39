"""The NoReGeo result rows: their schema, the types Ray changes restored, and the shard writer.

Shard layout, finished keys and run records are the store's (store.records).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa

from actors.contract import plain
from geometry.item import ITEM_SCHEMA
from pipelines.noregeo.scoring import SCORE_FIELDS
from store.atomic import write_parquet_atomic
from store.records import null_if_nan, run_guard
from store.storage import location

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


class ShardWriter:
    """Ray Data step (pyarrow batches): writes each batch, one shard per setup.

    With the run's lock `token`, a shard is written only while that run still holds the
    model folder's lock (store.run_lock): a late batch of a dead run writes nothing."""

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
