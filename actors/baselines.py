"""Baseline engines on the shared row contract: exact answers, chance, and a constant.

- `oracle` answers every item exactly (an upper bound, and a check of the whole pipeline);
- `random` answers by chance, seeded by the request key so a resumed run answers the same;
- `constant` always gives the first option (with balanced labels, a majority answer), 0 for
  numbers and (0, 0) for points.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from typing import Any

import numpy as np

from actors.contract import check_columns, with_outputs

NEEDS = ("request_key", "answer_type", "options")


def _with_outputs(
    batch: dict[str, np.ndarray], texts: list[str], started: float
) -> dict[str, np.ndarray]:
    return with_outputs(batch, texts, (time.perf_counter() - started) / max(len(texts), 1))


class _Baseline:
    """`delay_s` sleeps once per batch: a stand-in for model latency in benchmarks and tests."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s

    def _start(self) -> float:
        started = time.perf_counter()
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        return started


class OracleEngine(_Baseline):
    """Answers with the item's stored answer, in the model output format."""

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_columns(batch, (*NEEDS, "answer"), "oracle")
        started = self._start()
        # The stored answer JSON already has the exact model-output shape.
        texts = [str(a) for a in batch["answer"]]
        return _with_outputs(batch, texts, started)


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
    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_columns(batch, NEEDS, "random")
        started = self._start()
        texts = [
            json.dumps(random_answer(str(t), list(o) if o is not None else [], _rng(str(k))))
            for k, t, o in zip(
                batch["request_key"], batch["answer_type"], batch["options"], strict=True
            )
        ]
        return _with_outputs(batch, texts, started)


class ConstantEngine(_Baseline):
    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_columns(batch, NEEDS, "constant")
        started = self._start()
        texts = [
            json.dumps(constant_answer(str(t), list(o) if o is not None else []))
            for t, o in zip(batch["answer_type"], batch["options"], strict=True)
        ]
        return _with_outputs(batch, texts, started)
