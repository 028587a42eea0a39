"""`evaluate --engine vllm` end to end on vLLM's CPU build: the project's own vllm stage
(Ray's `ray.data.llm` processor, xgrammar) with a tiny random LM, as the README's vLLM block
runs it (its lines as printed, in a scratch copy of the checkout).

Image-text models through the same stage: test_vlm_vllm.py (Qwen2-VL, Idefics3, Llava-1.5)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.noregeo.summarize import load_results
from tests.readme_commands import README, assert_runs, readme_lines, scratch_checkout, vllm_block

# An engine load takes 60-90 s on an idle 2-core machine and several minutes on a busy one.
pytestmark = pytest.mark.timeout(1800)


@dataclass(frozen=True)
class ReadmeRun:
    """What the README's vLLM block wrote: its tiny model and its results."""

    model: Path
    rows: pl.DataFrame


def option(line: str, flag: str) -> str:
    """The value after `flag` in a command line."""
    words = shlex.split(line)
    return words[words.index(flag) + 1]


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory: pytest.TempPathFactory) -> ReadmeRun:
    """One engine load: the README's vLLM block run as printed (tiny model, every task's
    items in the text setup, `evaluate --engine vllm`) in a scratch copy of the checkout;
    tests/test_readme.py leaves these lines to this module."""
    lines = vllm_block(readme_lines(README.read_text(encoding="utf-8")))
    work = scratch_checkout(tmp_path_factory.mktemp("readme"))
    for line in lines:
        assert_runs(line, work)
    (evaluate,) = [line for line in lines if " evaluate " in line]
    assert option(evaluate, "--engine") == "vllm", evaluate
    rows = load_results(work / option(evaluate, "--out"))
    return ReadmeRun(work / option(evaluate, "--model"), rows)


@pytest.fixture(scope="module")
def text_rows(readme_run: ReadmeRun) -> pl.DataFrame:
    """The rows the README's vLLM block wrote."""
    return readme_run.rows


def test_tiny_lm_rows_are_all_valid_and_scored(text_rows: pl.DataFrame) -> None:
    df = text_rows
    assert df.height == 50  # 25 tasks x 2 items, text only: the tiny LM is text-only
    assert set(df["setup"]) == {"text"} and set(df["engine"]) == {"vllm"}
    assert df["engine_error"].null_count() == df.height
    assert df.filter(~pl.col("valid"))["generated_text"].to_list() == []
    assert df["correct"].null_count() == 0  # every row scored against its answer
    assert set(df["answer_type"]) == {"choice", "number", "point"}
    assert (df["num_generated_tokens"] > 0).all() and (df["num_input_tokens"] > 0).all()


def test_tiny_lm_answers_follow_each_rows_grammar(text_rows: pl.DataFrame) -> None:
    """Choice rows answer one of their own options: the grammar rode on each row."""
    choices = text_rows.filter(pl.col("answer_type") == "choice")
    assert choices.height > 0
    for parsed, options in zip(choices["parsed"], choices["options"], strict=True):
        assert json.loads(parsed)["answer"] in list(options), (parsed, options)


def test_vllm_saw_the_question_as_text_not_a_repr(readme_run: ReadmeRun) -> None:
    """Each row's prompt length as vLLM counted it equals the string-content rendering of
    its own question through the model's template, and not the list-of-parts rendering
    (which the string-only template prints as a repr, as Llama-3.x/Qwen2.5 templates do)."""
    from transformers import AutoTokenizer

    from actors.contract import prompt_ids_digest
    from pipelines.engines.prompts.requests import build_messages

    text_rows = readme_run.rows
    tokenizer = AutoTokenizer.from_pretrained(readme_run.model)

    def tokens(messages: list[dict[str, Any]]) -> tuple[int, str]:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return len(tokenizer(prompt, add_special_tokens=False)["input_ids"]), prompt

    for row in text_rows.iter_rows(named=True):
        messages = build_messages(row["system_prompt"], row["prompt"], None, True)
        # The ids vLLM received are the template's own, with its one BOS (the tiny tokenizer
        # also prepends BOS to any text, as Llama-3's does: test_plain_tokenizer.py).
        ids = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        assert row["prompt_ids_sha256"] == prompt_ids_digest(ids), row["item_id"]
        as_text, prompt = tokens(messages)
        as_parts, leaked = tokens(build_messages(row["system_prompt"], row["prompt"], None, False))
        assert row["prompt"] in prompt and "'type'" not in prompt
        assert "'type'" in leaked  # the shape the fix removed would have leaked a repr
        assert row["num_input_tokens"] == as_text != as_parts, row["item_id"]
