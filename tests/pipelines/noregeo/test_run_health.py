"""Rates over the rows a run covers, not every row in the model's results directory."""

from __future__ import annotations

import json

import polars as pl

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.noregeo.run_health import run_health

CFG = ModelConfig(name="m", repo="m", revision="r1", engine="hf")


SAMPLING = SamplingConfig(max_tokens=64)


def _row(
    item: str, max_tokens: int, error: str | None, valid: bool, revision: str = "r1"
) -> dict[str, object]:
    params = {"temperature": 0.0, "max_tokens": max_tokens, "seed": 0, "structured_outputs": {}}
    return {
        "task": item.rsplit("-", 1)[0],
        "setup": "text",
        "item_id": item,
        "revision": revision,
        "sampling_params": json.dumps(params, sort_keys=True),
        "engine_error": error,
        "valid": valid,
    }


def test_only_the_runs_tasks_limit_revision_and_sampling_count() -> None:
    rows = [
        _row("T-0", 64, None, True),
        _row("T-1", 64, "RuntimeError: boom", False),
        _row("T-2", 64, None, False),  # beyond --per-task 2
        _row("T-0", 2048, "other max_tokens", False),  # another run's sampling
        _row("T-1", 64, "other revision", False, revision="r0"),
        _row("U-0", 64, "other task", False),
    ]
    health = run_health(pl.DataFrame(rows), CFG, ["T"], ["text"], 2, SAMPLING)
    assert (health.rows, health.engine_errors, health.invalid) == (2, 1, 0)
    assert health.error_rate == 0.5 and health.first_error == "RuntimeError: boom"
    assert "engine errors 1 (50.0%); invalid outputs 0 of 1 answered (0.0%)" in health.line()
    no_limit = run_health(pl.DataFrame(rows), CFG, ["T"], ["text"], None, SAMPLING)
    assert (no_limit.rows, no_limit.invalid) == (3, 1)


def test_a_random_weight_models_line_says_its_answers_are_noise() -> None:
    """Issue 39: a tiny model's summary read like a measurement."""
    rows = pl.DataFrame([_row("T-0", 64, None, True)])
    tiny = ModelConfig(name="t", repo="t", revision="r1", engine="hf", weights="random")
    assert (
        "random weights: the answers are noise"
        in run_health(rows, tiny, ["T"], ["text"], None, SAMPLING).line()
    )
    assert "noise" not in run_health(rows, CFG, ["T"], ["text"], None, SAMPLING).line()
