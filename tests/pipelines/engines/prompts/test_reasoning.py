"""Reasoning models: their authors' sampling, the thinking-budget accounting, the rows out
of budget in summaries, and the sweep's cost estimate. No engine here: the end-to-end run on
vLLM's CPU build is tests/vllm/test_reasoning_vllm.py."""

from __future__ import annotations

import hashlib
import json

import polars as pl
import pytest

from pipelines.engines.models.config_yaml import CONFIG_DIR, load_config
from pipelines.engines.models.model_fields import OUTPUT_TOKENS_PER_ROW
from pipelines.engines.models.model_schema import ModelConfig, ModelConfigError
from pipelines.engines.prompts.reasoning import ThinkingMarkers, out_of_budget, thinking_tokens
from pipelines.engines.prompts.requests import SamplingConfig, request_key, sampling_params
from pipelines.noregeo.summarize import accuracy_table, summary_tables
from pipelines.sweep.plan import CHARS_PER_TOKEN, Job, estimate

# Two-token markers, so that a marker split over a boundary would be miscounted.
MARKS = ThinkingMarkers(start=(7, 8), end=(9, 10))


@pytest.mark.parametrize(
    ("prompt", "output", "expected"),
    [
        # R1-style prompt that opens the reasoning: its "\n" (5) counts, as vLLM counts it.
        ([1, 7, 8, 5], [3, 3, 9, 10, 4], (3, True)),
        # The model opens the reasoning itself (Qwen3): only tokens after the marker count.
        ([1, 2], [7, 8, 3, 3, 3, 9, 10, 4], (3, True)),
        ([1, 7, 8], [3, 3, 3], (3, False)),  # never ended
        ([1, 2], [4, 4], (0, False)),  # never started
        ([1, 7, 8, 9, 10], [4], (0, False)),  # a closed block in the prompt is no reasoning
        ([1, 7, 8], [9, 3, 9, 10], (2, True)),  # half a marker is a token like any other
    ],
)
def test_thinking_tokens_count_as_vllms_budget_does(
    prompt: list[int], output: list[int], expected: tuple[int, bool]
) -> None:
    assert thinking_tokens(prompt, output, MARKS) == expected


def test_out_of_budget_at_exactly_the_budget_or_the_token_cap() -> None:
    prompt = [1, 7, 8, 5]  # one reasoning token already in the prompt
    under = [3] * 2 + [9, 10, 4]  # 3 of 4
    at = [3] * 3 + [9, 10, 4]  # 4 of 4: vLLM forced the end here
    assert not out_of_budget(prompt, under, MARKS, budget=4, max_tokens=20)
    assert out_of_budget(prompt, at, MARKS, budget=4, max_tokens=20)
    assert out_of_budget(prompt, under, MARKS, budget=4, max_tokens=len(under))  # cap reached
    assert not out_of_budget(prompt, under, MARKS, budget=4, max_tokens=len(under) + 1)
    assert out_of_budget(prompt, [3, 3], MARKS, budget=4, max_tokens=20)  # still thinking


def _old_key(params: dict[str, object]) -> str:
    """The request key as it was computed before the optional sampling fields existed."""
    payload = {
        "item": ["T-0001", "text"],
        "model": ["m", "r"],
        "messages": ["s", "q"],
        "image_sha256": None,
        "sampling_params": params,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def test_models_without_their_own_sampling_keep_their_request_keys() -> None:
    cfg = load_config(CONFIG_DIR / "qwen2.5-7b-instruct.yaml")
    sampling = SamplingConfig(temperature=0.3, max_tokens=64, seed=5)
    assert sampling.for_model(cfg) == sampling
    params = sampling_params(sampling.for_model(cfg), "choice", ["yes", "no"])
    old = {"temperature": 0.3, "max_tokens": 64, "seed": 5}
    assert sampling.model_dump() == old  # settings.json and GeoBuild's params as before
    assert params == {**old, "structured_outputs": params["structured_outputs"]}
    key = request_key("T-0001", "text", "m", "r", "s", "q", None, params)
    assert key == _old_key({**old, "structured_outputs": params["structured_outputs"]})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("qwen3-8b-thinking", {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.0}),
        ("deepseek-r1-distill-qwen-7b", {"temperature": 0.6, "top_p": 0.95}),
    ],
)
def test_reasoning_configs_replace_greedy_with_their_authors_sampling(
    name: str, expected: dict[str, float]
) -> None:
    cfg = load_config(CONFIG_DIR / f"{name}.yaml")
    asked = SamplingConfig(temperature=0.0, max_tokens=64, seed=5).for_model(cfg)
    assert asked.model_dump() == {
        "max_tokens": 64,
        "seed": 5,
        **expected,
        "thinking_token_budget": cfg.thinking_max_tokens,
    }
    params = sampling_params(asked, "number", [])
    assert params["thinking_token_budget"] == 4096 and params["temperature"] == 0.6


def test_every_reasoning_config_samples_as_its_authors_say_and_costs_its_budget() -> None:
    from pipelines.engines.models.config_yaml import load_configs

    thinkers = [c for c in load_configs(CONFIG_DIR) if c.reasoning_parser]
    assert thinkers
    for cfg in thinkers:
        assert cfg.sampling is not None and cfg.sampling.temperature == 0.6, cfg.name
        assert cfg.expected_output_tokens == cfg.thinking_max_tokens + OUTPUT_TOKENS_PER_ROW


def test_a_config_sampling_field_is_checked(tmp_path: pytest.TempPathFactory) -> None:
    with pytest.raises(ValueError, match="top_p"):
        ModelConfig(name="m", repo="m", sampling={"top_p": 1.5})  # type: ignore[arg-type]
    path = tmp_path / "m.yaml"  # type: ignore[operator]
    path.write_text("name: m\nrepo: m\nsampling:\n  temprature: 0.6\n")
    with pytest.raises(ModelConfigError, match="sampling.temprature"):
        load_config(path)


def test_the_sweep_estimate_counts_each_configs_expected_output() -> None:
    chars = {"text": 400.0}
    plain = load_config(CONFIG_DIR / "qwen2.5-7b-instruct.yaml")
    thinker = load_config(CONFIG_DIR / "qwen3-8b-thinking.yaml")
    paper = load_config(CONFIG_DIR / "qwen3-8b.yaml")  # one-shot: the answer alone
    for cfg, output in (
        (plain, OUTPUT_TOKENS_PER_ROW),
        (thinker, 4096 + 16),
        (paper, OUTPUT_TOKENS_PER_ROW),
    ):
        est = estimate(Job(cfg=cfg, setups=["text"], rows={"text": 100}), chars)
        assert est.tokens == 100 * (400 / CHARS_PER_TOKEN + output), cfg.name


def _rows(flags: list[bool | None], correct: list[bool]) -> pl.DataFrame:
    n = len(flags)
    return pl.DataFrame(
        {
            "model": ["m"] * n,
            "task": ["C-BCT-CT"] * n,
            "category": ["c"] * n,
            "setup": ["text"] * n,
            "answer_type": ["choice"] * n,
            "request_key": [f"k{i}" for i in range(n)],
            "item_id": [f"C-BCT-CT-{i:04d}" for i in range(n)],
            "pair_id": pl.Series([None] * n, dtype=pl.String),
            "valid": [True] * n,
            "correct": correct,
            "sq_error": [None] * n,
            "engine_error": [None] * n,
            "out_of_budget": pl.Series(flags, dtype=pl.Boolean),
        }
    )


def test_rows_out_of_budget_are_counted_apart_and_scored_wrong() -> None:
    # 2 rows out of budget, 3 answered: 2 of them right. The paper gives no credit without a
    # conforming answer: accuracy 2 of 5; over the answered rows 2 of 3, shown beside it.
    df = _rows([True, True, False, False, False], [False, True, True, True, False])
    table = accuracy_table(df, ["model", "setup"])
    assert table["out_of_budget"].to_list() == [2] and table["unanswered"].to_list() == [2]
    assert table["n"].to_list() == [5]
    assert table["accuracy"].to_list() == [pytest.approx(2 / 5)]
    assert table["answered_accuracy"].to_list() == [pytest.approx(2 / 3)]
    overall = summary_tables(df)["overall"]
    assert overall["out_of_budget"].to_list() == [2]
    assert overall["accuracy %"].to_list() == [pytest.approx(40.0)]
    assert overall["answered-only accuracy %"].to_list() == [pytest.approx(66.7)]
    by_task = summary_tables(df)["accuracy_by_task"]
    assert by_task["text %"].to_list() == [pytest.approx(40.0)]


def test_tables_of_models_that_do_not_reason_have_no_budget_column() -> None:
    df = _rows([None, None], [True, False])
    assert "out_of_budget" not in accuracy_table(df, ["model", "setup"]).columns
    assert accuracy_table(df.drop("out_of_budget"), ["model", "setup"])["accuracy"][0] == 0.5
