"""The http engine against vLLM's own OpenAI server (CPU build, 127.0.0.1), tiny text LM.

The server runs from the CPU-vLLM venv (`make setup-vllm` builds `<repo>/.venv-vllm`;
GEOSEE_VLLM_PYTHON names another python). Without it these tests fail, never skip: the
http engine's vLLM mode is otherwise untested here. The server starts once per module
(a minute or more on two cores) and is stopped by process group, failures included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from pipelines.cli import main
from pipelines.engines.prompts.requests import build_messages
from pipelines.noregeo.summarize import load_results
from tests.actors.vllm_server import KEY_ENV, Served, serve

SERVED_NAME = "tiny"
# One task per answer type, for the cheap JSON-schema run (every row there runs to max_tokens).
ONE_TASK_PER_TYPE = ("C-ACM-PST", "N-BCT-PAT", "N-BCT-MT")  # choice, number, point


# About 7 min on two busy cores (server start ~4 min); still part of `make test`.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm_server(tiny_llm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("vllm_server") / "server.log"
    with serve(tiny_llm_dir, SERVED_NAME, log) as served:
        yield served


def _config(folder: Path, server: Served, constraint: str | None) -> Path:
    """A model config for the served tiny LM; written per run (the port changes)."""
    path = folder / "tiny-llm-vllm-server.yaml"
    lines = [
        "name: tiny-llm-vllm-server",
        f"repo: {SERVED_NAME}",  # the served model name is what the server answers to
        "revision: local",
        "engine: http",
        "modality: text",
        "setups: [text]",
        f"api_base: {server.base_url}",
        f"api_key_env: {KEY_ENV}",
        "local: true",
    ]
    if constraint is not None:
        lines.append(f"api_constraint: {constraint}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _evaluate(items: Path, out: Path, config: Path, *extra: str) -> pl.DataFrame:
    args = ["evaluate", "--items", str(items), "--engine", "http", "--model", str(config)]
    assert main([*args, "--setups", "text", "--out", str(out), *extra]) == 0
    return load_results(out)


@pytest.fixture(scope="module")
def grammar_run(
    small_items: Path, vllm_server: Served, tmp_path_factory: pytest.TempPathFactory
) -> pl.DataFrame:
    # small_items first: Ray starts before the server loads, not while it competes for CPUs.
    folder = tmp_path_factory.mktemp("grammar_run")
    config = _config(folder, vllm_server, "grammar")
    # Default max_tokens (2048): the grammar alone must end every answer.
    return _evaluate(small_items, folder / "results", config, "--per-task", "2")


def test_grammar_mode_gives_every_row_a_valid_scored_answer(grammar_run: pl.DataFrame) -> None:
    df = grammar_run
    assert df.height == 50 and df["task"].n_unique() == 25
    assert df["engine_error"].null_count() == df.height, df["engine_error"].drop_nulls()[0:3]
    invalid = df.filter(~pl.col("valid"))
    assert invalid.height == 0, invalid.select("task", "generated_text", "parse_error").head(5)
    assert df["correct"].null_count() == 0  # every row scored, right or wrong
    assert set(df["answer_type"]) == {"choice", "number", "point"}
    # Short, grammar-ended answers: far from max_tokens, and the server saw a real prompt.
    assert (df["num_generated_tokens"] > 0).all() and df["num_generated_tokens"].max() < 64
    assert (df["num_input_tokens"] > 0).all()


def test_served_prompt_is_the_question_text_not_a_list_repr(
    grammar_run: pl.DataFrame, vllm_server: Served
) -> None:
    row = grammar_run.sort("request_key").row(0, named=True)
    messages = build_messages(row["system_prompt"], row["prompt"], None, text_only=True)
    body = {"model": SERVED_NAME, "messages": messages, "add_generation_prompt": True}
    tokens = vllm_server.post("/tokenize", body)
    # Same count as the completion's prompt_tokens: these are the messages the engine sent.
    assert tokens["count"] == row["num_input_tokens"]
    served = vllm_server.post("/detokenize", {"model": SERVED_NAME, "tokens": tokens["tokens"]})
    prompt = served["prompt"]
    assert isinstance(prompt, str)
    assert row["prompt"] in prompt and row["system_prompt"] in prompt
    for repr_marker in ("<ndarray>", "array(", "{'type'", '{"type"'):
        assert repr_marker not in prompt


def test_json_schema_mode_is_accepted_but_lets_the_model_pad_with_whitespace(
    vllm_server: Served, small_items: Path, tmp_path: Path
) -> None:
    max_tokens = 48
    config = _config(tmp_path, vllm_server, None)  # the default: json_schema
    df = _evaluate(
        small_items,
        tmp_path / "results",
        config,
        *("--per-task", "1", "--tasks", ",".join(ONE_TASK_PER_TYPE)),
        *("--max-tokens", str(max_tokens)),
    )
    assert sorted(set(df["task"])) == sorted(ONE_TASK_PER_TYPE)
    # The server takes the JSON-schema request (no 400): the mode stays usable for OpenAI.
    assert df["engine_error"].null_count() == df.height, df["engine_error"].drop_nulls()[0:3]
    # Why the grammar mode exists: JSON schemas cannot bound whitespace, and this model fills
    # max_tokens with it. If this starts failing, the server bounds whitespace now.
    invalid = df.filter(~pl.col("valid"))
    assert invalid.height > 0, df.select("task", "generated_text")
    for text, generated in zip(
        invalid["generated_text"], invalid["num_generated_tokens"], strict=True
    ):
        assert generated == max_tokens and text.strip() != text, json.dumps(text)
