"""Baseline engines on the shared row contract: exact answers, chance, and a constant.

- `oracle` answers every item exactly (an upper bound, and a check of the whole pipeline);
- `random` answers by chance, seeded by the request key so a resumed run answers the same;
- `constant` always gives the first option (with balanced labels, a majority answer), 0 for
  numbers and (0, 0) for points.

They take Arrow batches (`batch_format="pyarrow"`): they read a few small columns and never
the messages, whose conversion to numpy objects and back would cost more than the answers.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from typing import Any

import pyarrow as pa

from actors.contract import ENGINE_OUTPUT, arrow_columns, check_columns, no_token_outputs
from geometry.thresholds import GRID_MAX, GRID_MIN

NEEDS = ("request_key", "answer_type", "options")


class _Baseline:
    """`delay_s` sleeps once per batch: a stand-in for model latency in benchmarks and tests."""

    name = "baseline"
    needs: tuple[str, ...] = NEEDS

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s

    def answers(self, columns: dict[str, list[Any]]) -> list[str]:
        raise NotImplementedError

    def __call__(self, batch: pa.Table) -> pa.Table:
        check_columns(batch.column_names, self.needs, self.name)
        started = time.perf_counter()
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        texts = self.answers({c: batch.column(c).to_pylist() for c in self.needs})
        seconds = (time.perf_counter() - started) / max(len(texts), 1)
        return arrow_columns(batch, ENGINE_OUTPUT, no_token_outputs(texts, seconds))


class OracleEngine(_Baseline):
    """Answers with the item's stored answer, which has the exact model-output shape."""

    name = "oracle"
    needs = (*NEEDS, "answer")

    def answers(self, columns: dict[str, list[Any]]) -> list[str]:
        """The items' stored answers."""
        return [str(a) for a in columns["answer"]]


def _rng(request_key: str) -> random.Random:
    return random.Random(int(hashlib.sha256(request_key.encode()).hexdigest()[:16], 16))


def random_answer(answer_type: str, options: list[str], rng: random.Random) -> dict[str, Any]:
    """Chance: a uniform option, or numbers uniform over the grid's range."""
    if answer_type == "choice":
        return {"answer": rng.choice(options)}
    if answer_type == "number":
        return {"answer": rng.randint(0, GRID_MAX - GRID_MIN)}  # a length on the grid
    return {"x": rng.randint(GRID_MIN, GRID_MAX), "y": rng.randint(GRID_MIN, GRID_MAX)}


def constant_answer(answer_type: str, options: list[str]) -> dict[str, Any]:
    """The first option, 0, or (0, 0), as JSON of the answer's shape."""
    if answer_type == "choice":
        return {"answer": options[0]}
    if answer_type == "number":
        return {"answer": 0}
    return {"x": 0, "y": 0}


class RandomEngine(_Baseline):
    """Answers by chance (`random_answer`), seeded by each request key."""

    name = "random"

    def answers(self, columns: dict[str, list[Any]]) -> list[str]:
        """A chance answer per row, the same on every run for the same request key."""
        return [
            json.dumps(random_answer(t, list(o or []), _rng(k)))
            for k, t, o in zip(
                columns["request_key"], columns["answer_type"], columns["options"], strict=True
            )
        ]


class ConstantEngine(_Baseline):
    """Answers every item the same way (`constant_answer`): a majority-class baseline."""

    name = "constant"

    def answers(self, columns: dict[str, list[Any]]) -> list[str]:
        """The constant answer per row."""
        return [
            json.dumps(constant_answer(t, list(o or [])))
            for t, o in zip(columns["answer_type"], columns["options"], strict=True)
        ]
