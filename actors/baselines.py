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

from actors.contract import check_columns

NEEDS = ("request_key", "answer_type", "options")
OUTPUT_TYPES = {
    "generated_text": pa.string(),
    "num_input_tokens": pa.int64(),
    "num_generated_tokens": pa.int64(),
    "time_taken_llm": pa.float64(),
    "engine_error": pa.string(),
}


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
        n = len(texts)
        values: dict[str, list[Any]] = {
            "generated_text": texts,
            "num_input_tokens": [0] * n,
            "num_generated_tokens": [0] * n,
            "time_taken_llm": [(time.perf_counter() - started) / max(n, 1)] * n,
            "engine_error": [None] * n,
        }
        for column, kind in OUTPUT_TYPES.items():
            batch = batch.append_column(column, pa.array(values[column], kind))
        return batch


class OracleEngine(_Baseline):
    """Answers with the item's stored answer, which has the exact model-output shape."""

    name = "oracle"
    needs = (*NEEDS, "answer")

    def answers(self, columns: dict[str, list[Any]]) -> list[str]:
        return [str(a) for a in columns["answer"]]


def _rng(request_key: str) -> random.Random:
    return random.Random(int(hashlib.sha256(request_key.encode()).hexdigest()[:16], 16))


def random_answer(answer_type: str, options: list[str], rng: random.Random) -> dict[str, Any]:
    """Chance: a uniform option, or numbers uniform over the grid's range."""
    if answer_type == "choice":
        return {"answer": rng.choice(options)}
    if answer_type == "number":
        return {"answer": rng.randint(0, 40)}
    return {"x": rng.randint(-20, 20), "y": rng.randint(-20, 20)}


def constant_answer(answer_type: str, options: list[str]) -> dict[str, Any]:
    if answer_type == "choice":
        return {"answer": options[0]}
    if answer_type == "number":
        return {"answer": 0}
    return {"x": 0, "y": 0}


class RandomEngine(_Baseline):
    name = "random"

    def answers(self, columns: dict[str, list[Any]]) -> list[str]:
        return [
            json.dumps(random_answer(t, list(o or []), _rng(k)))
            for k, t, o in zip(
                columns["request_key"], columns["answer_type"], columns["options"], strict=True
            )
        ]


class ConstantEngine(_Baseline):
    name = "constant"

    def answers(self, columns: dict[str, list[Any]]) -> list[str]:
        return [
            json.dumps(constant_answer(t, list(o or [])))
            for t, o in zip(columns["answer_type"], columns["options"], strict=True)
        ]
