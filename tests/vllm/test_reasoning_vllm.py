"""A reasoning model's thinking budget, end to end on vLLM's CPU build (one engine load).

The tiny random LM stands in for a thinking model (`tiny-model --kind thinking`: `<think>`
and `</think>` tokens, an R1-style template whose generation prompt opens the reasoning)
under vLLM's own deepseek_r1 reasoning parser. A random model practically never writes
`</think>` by itself, so every row shows whether vLLM's thinking budget ended the reasoning
and the answer grammar took over after it. The rows go through the project's `evaluate`
with its vllm stage; a tap after the engine keeps the token ids vLLM returned, from which
each test recounts what it checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.engines.models.config_yaml import load_config
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.engines.stages.options import EngineOptions
from pipelines.engines.stages.vllm_path import vllm_stage
from pipelines.noregeo.evaluate_pipeline import evaluate
from pipelines.noregeo.run_settings import EvaluateSettings
from pipelines.noregeo.summarize import load_results, summary_tables

pytestmark = pytest.mark.timeout(1800)

BUDGET = 12  # reasoning tokens before vLLM forces </think>
MAX_TOKENS = 48  # for the answer, on top of the budget


def _tapped_stage(raw_dir: Path) -> Any:
    """The vllm stage, then a step that writes what it returned (token ids included)."""

    def tap(batch: dict[str, Any]) -> dict[str, Any]:
        import uuid

        ids = pa.list_(pa.int64())
        table = pa.table(
            {
                "request_key": [str(k) for k in batch["request_key"]],
                "prompt_token_ids": pa.array(
                    [[int(i) for i in x] for x in batch["prompt_token_ids"]], ids
                ),
                "generated_tokens": pa.array(
                    [[int(i) for i in x] for x in batch["generated_tokens"]], ids
                ),
                "generated_text": [str(t) for t in batch["generated_text"]],
            }
        )
        pq.write_table(table, raw_dir / f"{uuid.uuid4().hex}.parquet")
        return batch

    def stage(ds: Any, cfg: Any, opts: EngineOptions) -> Any:
        return vllm_stage(ds, cfg, opts).map_batches(tap, batch_format="numpy", num_cpus=0.25)

    return stage


@pytest.fixture(scope="module")
def run(
    vllm_ray: Any,
    few_items: Path,
    tiny_thinking_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("thinking")
    config = work / "tiny-thinker.yaml"
    config.write_text(
        json.dumps(
            {
                "name": "tiny-thinker",
                "repo": str(tiny_thinking_dir),
                "revision": "local",
                "local": True,
                "reasoning_parser": "deepseek_r1",
                "thinking_max_tokens": BUDGET,
                "sampling": {"temperature": 0.6, "top_p": 0.95},
            }
        )
    )
    cfg = load_config(config)
    raw_dir = work / "raw"
    raw_dir.mkdir()
    settings = EvaluateSettings(
        tasks=sorted({p.stem.removeprefix("part-") for p in few_items.glob("part-*.parquet")}),
        setups=["text"],
        sampling=SamplingConfig(temperature=0.0, max_tokens=MAX_TOKENS),
    )
    files = sorted(few_items.glob("part-*.parquet"))
    out = work / "out"
    written = evaluate(files, cfg, settings, out, engine_stage=_tapped_stage(raw_dir))
    raw = pl.read_parquet(sorted(raw_dir.glob("*.parquet")))
    return {"written": written, "out": out, "raw": raw, "cfg": cfg}


def _tokenizer(path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def test_the_budget_ends_thinking_and_the_grammar_answers_after_it(
    run: dict[str, Any], tiny_thinking_dir: Path
) -> None:
    tok = _tokenizer(tiny_thinking_dir)
    start, end = tok.convert_tokens_to_ids("<think>"), tok.convert_tokens_to_ids("</think>")
    rows = load_results(run["out"])
    assert run["written"] == rows.height == 50 and rows["engine_error"].null_count() == 50
    answers = dict(zip(rows["request_key"], rows["generated_text"], strict=True))
    valid = dict(zip(rows["request_key"], rows["valid"], strict=True))
    forced = 0
    for row in run["raw"].iter_rows(named=True):
        prompt, output = row["prompt_token_ids"], row["generated_tokens"]
        # The template opened the reasoning: everything after <think> counts to the budget.
        in_prompt = prompt[::-1].index(start)  # tokens after <think> in the prompt
        assert end in output, row["request_key"]  # without the budget: 1 chance in ~514 a token
        thought = in_prompt + output.index(end)
        assert thought <= BUDGET
        forced += thought == BUDGET
        # After </think>, the grammar: the stored answer is the text after it, and valid.
        after = tok.decode(output[output.index(end) + 1 :], skip_special_tokens=True)
        assert answers[row["request_key"]] == after.lstrip()
        assert valid[row["request_key"]], after
    assert forced >= 45  # a random model ends its reasoning itself once in a few hundred tokens


def test_vllms_text_is_what_rays_detokenize_stage_would_have_made(
    run: dict[str, Any], tiny_thinking_dir: Path
) -> None:
    """Ray's detokenize stage is off: the text is vLLM's own decode of the same tokens, as
    Ray's stage computes it (`batch_decode(..., skip_special_tokens=True)`)."""
    tok = _tokenizer(tiny_thinking_dir)
    raw = run["raw"]
    ray_text = tok.batch_decode(raw["generated_tokens"].to_list(), skip_special_tokens=True)
    for ours, theirs in zip(raw["generated_text"], ray_text, strict=True):
        # The stage keeps what follows the reasoning; the whole decode ends with it.
        assert theirs.rsplit("</think>", 1)[1].lstrip() == ours


def test_out_of_budget_rows_are_flagged_and_counted_apart(
    run: dict[str, Any], tiny_thinking_dir: Path
) -> None:
    tok = _tokenizer(tiny_thinking_dir)
    end = tok.convert_tokens_to_ids("</think>")
    rows = load_results(run["out"])
    flags = dict(zip(rows["request_key"], rows["out_of_budget"], strict=True))
    start = tok.convert_tokens_to_ids("<think>")
    for row in run["raw"].iter_rows(named=True):
        prompt, output = row["prompt_token_ids"], row["generated_tokens"]
        in_prompt = prompt[::-1].index(start)  # tokens after <think> in the prompt
        thought = in_prompt + output.index(end)
        ran_out = thought >= BUDGET or len(output) >= BUDGET + MAX_TOKENS
        assert flags[row["request_key"]] == ran_out, row["request_key"]
    overall = summary_tables(rows)["overall"]
    assert overall["out_of_budget"].to_list() == [int(rows["out_of_budget"].sum())]
    # The reported accuracy is over every item (an out-of-budget row wrong: the paper's),
    # the answered-only one over the rows that kept within their budget.
    kept = rows.filter(~pl.col("out_of_budget"))
    right = int(kept["correct"].fill_null(False).sum())
    assert abs(overall["accuracy %"][0] - right / rows.height * 100) < 0.05
    expected = kept["correct"].mean() * 100 if kept.height else None
    got = overall["answered-only accuracy %"][0]
    assert (got is None and expected is None) or abs(got - expected) < 0.05


def test_the_authors_sampling_and_budget_are_what_the_run_recorded(run: dict[str, Any]) -> None:
    rows = load_results(run["out"])
    asked = {json.dumps(json.loads(p), sort_keys=True) for p in rows["sampling_params"]}
    params = [json.loads(p) for p in asked]
    assert {(p["temperature"], p["top_p"], p["thinking_token_budget"]) for p in params} == {
        (0.6, 0.95, BUDGET)
    }
    assert {p["max_tokens"] for p in params} == {MAX_TOKENS}  # as asked, not as grown
    root = run["out"] / "noregeo" / "model=tiny-thinker"
    settings = json.loads((root / "settings.json").read_text())
    assert settings["sampling"] == {
        "temperature": 0.6,
        "max_tokens": MAX_TOKENS,
        "seed": 0,
        "top_p": 0.95,
        "thinking_token_budget": BUDGET,
    }
