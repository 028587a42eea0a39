"""The NoReGeo result rows: their schema and the shard writer.

Shard layout, finished keys and run records are the store's (store.records).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa

from actors.contract import ENGINE_OUTPUT, plain
from geometry.item import ITEM_SCHEMA
from pipelines.engines.prompts.reasoning import OUT_OF_BUDGET
from pipelines.noregeo.scoring import SCORE_FIELDS
from store.atomic import write_parquet_atomic
from store.records import run_guard
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
        ENGINE_OUTPUT.field("generated_text"),
    ]
    + list(SCORE_FIELDS)
    # The column order of shards written before ENGINE_OUTPUT existed: the answer, its
    # scores, then the engine's accounting.
    + [f for f in ENGINE_OUTPUT if f.name != "generated_text"]
    # A reasoning model's row that ran out of its thinking budget or max_tokens (vLLM;
    # pipelines.engines.prompts.reasoning); null for every other model and engine.
    + [pa.field(OUT_OF_BUDGET, pa.bool_())]
)

# What a block must hold before Ray joins blocks (actors.contract.restore_types); the
# sampling parameters travel as a struct and become JSON text only in the writer.
BLOCK_SCHEMA = pa.schema([f for f in RESULT_SCHEMA if f.name != "sampling_params"])


class ShardWriter:
    """Ray Data step (pyarrow batches): writes each batch, one shard per setup.

    With the run's lock `token`, a shard is written only while that run still holds the
    model folder's lock (store.run_lock): a late batch of a dead run writes nothing."""

    def __init__(self, root: str, model: str, revision: str, engine: str, token: str | None = None):
        self.root = location(root)
        self.constants = {"model": model, "revision": revision, "engine": engine}
        self.guard = run_guard(self.root, token)

    def __call__(self, batch: pa.Table) -> dict[str, np.ndarray]:
        """Write the batch, one shard per setup; how many rows were written."""
        return {"rows": np.array([self.write_rows(batch.to_pylist())], dtype=np.int64)}

    def write_rows(self, batch: list[dict[str, Any]]) -> int:
        """Write scored rows, one shard per setup; how many were written."""
        rows_by_setup: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in batch:
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
        return written
