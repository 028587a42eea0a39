"""The baselines' one step: answer, score and write each shard's rows in one call.

As separate steps, Ray fuses the baselines with the scorer and writer into one task, whose
output it buffers into one block per input block (an item file): the writer then saw each
file's rows only when the whole file was answered, and a killed run lost them all. Here the
writer runs on every batch of `shard_rows`, so what a kill can lose is one shard per task.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from actors.contract import restore_types
from pipelines.noregeo.results import BLOCK_SCHEMA, ShardWriter
from pipelines.noregeo.scoring import parse_and_score

Answer = Callable[[pa.Table], pa.Table]


def score_block(batch: pa.Table) -> pa.Table:
    """One block at a time, before Ray joins blocks: types restored, answers scored, the
    messages (images included) dropped; the item table keeps them."""
    batch = parse_and_score(restore_types(batch, BLOCK_SCHEMA))
    return batch.drop_columns([c for c in ("messages",) if c in batch.column_names])


class AnswerScoreWrite:
    """Ray Data step (pyarrow): `answer` in slices of `engine_batch` rows (a baseline's
    delay is per engine call, as apart), then score and write the batch."""

    def __init__(self, answer: Answer, engine_batch: int, writer: ShardWriter) -> None:
        self.answer, self.engine_batch, self.writer = answer, engine_batch, writer

    def __call__(self, batch: pa.Table) -> dict[str, np.ndarray]:
        """Answer, score and write the batch; how many rows were written."""
        parts = [
            self.answer(batch.slice(start, self.engine_batch))
            for start in range(0, batch.num_rows, self.engine_batch)
        ]
        if not parts:
            return {"rows": np.array([0], dtype=np.int64)}
        return self.writer(score_block(pa.concat_tables(parts)))


def baseline_engine(engine: str, delay_s: float) -> Answer:
    """The baseline engine `engine` (oracle, random, constant) as a callable on batches."""
    from actors.baselines import ConstantEngine, OracleEngine, RandomEngine

    cls = {"oracle": OracleEngine, "random": RandomEngine, "constant": ConstantEngine}[engine]
    return cls(delay_s=delay_s)
