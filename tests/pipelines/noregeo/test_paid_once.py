"""No answer is paid for twice (issue 51, item 6): an `evaluate` cut short by Ctrl-C and run
again gets each answer from its engine once, counted where answers are made (the server's
replies, the hf model's decoded rows), and ends with the rows of an uninterrupted run, key
by key, once each. Before the request cache (store.request_cache), answers inside an
engine actor's batch, or finished and queued in Ray Data, were dropped by the Ctrl-C and
paid for again by the rerun.

Each test runs three `evaluate` commands (cut short, rerun, uninterrupted), so they run in
`make test-paid-once`, not `make test`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.noregeo.summarize import load_results
from tests.actors.loopback_server import LoopbackServer, Reply
from tests.conftest import REPO
from tests.pipelines.raw_shards import raw_duplicates

pytestmark = pytest.mark.paid_once

# 25 tasks x --per-task 4, text setup: rows of one run.
PER_TASK = 4
ROWS = 25 * PER_TASK
# The http engine's rows in flight at once (HTTPEngine's default max_concurrency).
IN_FLIGHT = 8
# The server's answers before it holds every request, and the engine batch: 40 is not a
# multiple of 16, so the batch it holds was partly answered (its answered rows never reach
# the driver: only the cache keeps them).
ANSWERED_FIRST = 40
ENGINE_BATCH = 16
ENV = {**os.environ, "PYTHONPATH": str(REPO), "GEOSEE_TEST_KEY": "sk-paid-once"}


def _start(argv: list[str]) -> subprocess.Popen[str]:
    """The command in a session of its own (its process group is the terminal's, for the
    signal), SIGINT at its default: a background job of a non-interactive shell starts with
    it ignored."""
    return subprocess.Popen(
        argv, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def _interrupt_when(
    run: subprocess.Popen[str], ready: Callable[[], bool], signum: int = signal.SIGINT
) -> tuple[int, str]:
    """Ctrl-C (SIGINT to the process group; or `signum`, as a batch system's SIGTERM to the
    job's processes) once `ready()`; the exit code and stderr."""
    try:
        deadline = time.monotonic() + 600
        while not ready() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready(), "the run never reached the point to interrupt"
        os.killpg(run.pid, signum)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    return run.returncode, stderr


def _complete(argv: list[str]) -> None:
    done = subprocess.run(argv, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _saved(out: Path) -> int:
    return load_results(out).height if list(out.rglob("part-*.parquet")) else 0


def _same_rows(out: Path, reference: Path, expected: int) -> None:
    """The rows equal the reference run's key by key, once each (time_taken_llm aside: a
    cached answer keeps the time it took when it was paid for)."""
    rows, want = load_results(out), load_results(reference)
    assert rows["request_key"].n_unique() == rows.height == want.height == expected
    (model,) = (out / "noregeo").glob("model=*")
    assert raw_duplicates(model) == 0
    rows, want = (f.drop("time_taken_llm").sort("request_key") for f in (rows, want))
    assert rows.equals(want), pl.concat([rows, want]).unique(keep="none")


def _answer(request: Mapping[str, Any]) -> str:
    """A valid answer under the request's schema, which differs from row to row (a cached
    answer given to the wrong row would show)."""
    properties = request["response_format"]["json_schema"]["schema"]["properties"]
    seed = sum(map(ord, json.dumps(request["messages"])))
    answer = {
        name: spec["enum"][seed % len(spec["enum"])] if "enum" in spec else seed % 7
        for name, spec in properties.items()
    }
    return json.dumps(answer)


class CountingServer:
    """Loopback answers, counted as they are sent; with `hold`, every request after the
    first ANSWERED_FIRST waits unanswered (then its connection is dropped, no answer)."""

    def __init__(self, hold: bool) -> None:
        self.sent = self.held = 0
        self.holding = hold
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.server = LoopbackServer(answer=_answer, decide=self._decide, max_requests=10_000)

    def _decide(self, request: Mapping[str, Any], attempt: int) -> Reply | None:
        with self._lock:
            hold = self.holding and self.sent >= ANSWERED_FIRST
            if hold:
                self.held += 1
            else:
                self.sent += 1  # answered: paid for
        if not hold:
            return None
        self._release.wait()
        return Reply(drop=True)

    def __enter__(self) -> CountingServer:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self.server.stop()


def _http_command(out: Path, cfg: Path, base_url: str) -> list[str]:
    cfg.write_text(
        "name: api-model\nrepo: gpt-test\nengine: http\nmodality: text\nsetups: [text]\n"
        f"api_base: {base_url}\napi_key_env: GEOSEE_TEST_KEY\n"
    )
    return [sys.executable, "-m", "pipelines", "evaluate", "--engine", "http", "--model", str(cfg)]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_http_run_pays_each_answer_once(
    small_items: Path, tmp_path: Path, signum: int
) -> None:
    """The server answers 40 requests, then holds every further one; once it holds the
    engine's 8 rows in flight (so each answered row's thread has moved on), Ctrl-C (or
    SIGTERM to every process of the job, as Slurm's scancel sends it). The rerun (the same
    command) completes; the server's answers over both runs are the rows."""
    args = ["--items", str(small_items), "--setups", "text", "--per-task", str(PER_TASK)]
    args += ["--batch-size", str(ENGINE_BATCH), "--shard-rows", "1000"]
    out, reference = tmp_path / "out", tmp_path / "reference"
    with CountingServer(hold=True) as counting:
        command = [*_http_command(out, tmp_path / "api-model.yaml", counting.server.base_url)]
        run = _start([*command, *args, "--out", str(out)])
        code, stderr = _interrupt_when(run, lambda: counting.held >= IN_FLIGHT, signum)
        assert code == 128 + signum, stderr[-3000:]
        assert counting.sent == ANSWERED_FIRST, stderr[-3000:]
        saved = _saved(out)
        assert saved < ANSWERED_FIRST  # answered rows were lost to the Ctrl-C in Ray's hands
        counting.holding = False
        _complete([*command, *args, "--out", str(out)])
        sent = counting.sent
    with CountingServer(hold=False) as plain:
        command = _http_command(reference, tmp_path / "api-model.yaml", plain.server.base_url)
        _complete([*command, *args, "--out", str(reference)])
        assert plain.sent == ROWS
    name = signal.Signals(signum).name
    print(f"http, {name}: {sent} answers paid for {ROWS} rows ({saved} saved)")
    assert sent == ROWS, f"{sent} answers paid for {ROWS} rows"
    _same_rows(out, reference, ROWS)


def _decoded(counts: Path) -> int:
    return len(counts.read_text().splitlines()) if counts.exists() else 0


def test_an_hf_run_interrupted_mid_batch_decodes_each_row_once(
    small_items: Path, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    """The tiny LM in sub-batches of 2 rows, engine batches of 8: once 20 rows are decoded,
    the next sub-batch hangs (its engine batch's first rows decoded) and Ctrl-C comes. The
    rerun completes; the rows the model decoded over both runs are the rows."""
    rows = ROWS // 2
    args = ["--items", str(small_items), "--engine", "hf", "--model", str(tiny_llm_dir)]
    args += ["--per-task", "2", "--max-tokens", "48", "--batch-size", "8"]
    args += ["--shard-rows", "1000"]
    out, reference, counts = tmp_path / "out", tmp_path / "reference", tmp_path / "decoded"
    scenario = [sys.executable, "-m", "tests.pipelines.hf_count_scenario", str(counts)]
    stopped = Path(f"{counts}.stopped")
    run = _start([*scenario, "20", *args, "--out", str(out)])
    code, stderr = _interrupt_when(run, stopped.exists)
    assert code == 130, stderr[-3000:]
    first = _decoded(counts)
    assert 20 <= first < rows and first % 8 != 0  # mid-batch
    saved = _saved(out)
    decoded = rerun_counted([*scenario, "0", *args], counts, out, reference, rows)
    print(f"hf: {decoded} rows decoded for {rows} rows ({first} before, {saved} saved)")


def rerun_counted(command: list[str], counts: Path, out: Path, reference: Path, rows: int) -> int:
    """The cut-short run's `command` again into `out`, then uninterrupted into `reference`,
    both counting into `counts`: what the cut-short run and its rerun made, asserted to be
    one per row (and the uninterrupted run's one per row), and the rows equal."""
    _complete([*command, "--out", str(out)])
    made = _decoded(counts)
    _complete([*command, "--out", str(reference)])
    assert made == rows, f"{made} made for {rows} rows"
    assert _decoded(counts) == made + rows  # the uninterrupted run made each once
    _same_rows(out, reference, rows)
    return made
