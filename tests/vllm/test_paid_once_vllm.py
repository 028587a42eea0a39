"""No answer is made twice by the vllm engine (issue 51, item 6), on vLLM's CPU build: an
`evaluate --engine vllm` cut short by Ctrl-C while an engine batch is partly answered, then
run again, makes each answer once, counted where vLLM makes them (the count scenario wraps
Ray's call into vLLM), and ends with the rows of an uninterrupted run, key by key, once
each. Before the vllm engine kept a request cache (pipelines/engines/stages/vllm_cache.py),
the answered rows of a batch still in the engine stage were lost to the Ctrl-C and made
again by the rerun.

Three runs, an engine load each (~1 min here): `make test-paid-once`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from store.request_cache import CACHE_FOLDER, read_cache
from store.storage import location
from tests.pipelines.noregeo.test_paid_once import (
    _decoded,
    _interrupt_when,
    _saved,
    _start,
    rerun_counted,
)

pytestmark = [pytest.mark.paid_once, pytest.mark.timeout(1800)]

PER_TASK = 2
ROWS = 25 * PER_TASK  # text setup
BATCH = 8
STOP_AFTER = 20
SETTLE_S = 60  # at most this long for the answered rows of the stopped batches to be kept


def _kept(out: Path) -> int:
    folders = list(out.glob(f"noregeo/model=*/{CACHE_FOLDER}"))
    return len(read_cache(location(str(folders[0])))) if folders else 0


def test_a_vllm_run_interrupted_mid_batch_makes_each_answer_once(
    small_items: Path, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    """Once vLLM has made 20 answers, the next engine batch to start hangs on its last row
    (its other rows answered); Ctrl-C once those answers are in (on the code before, they
    are never kept: after SETTLE_S). The rerun completes; vLLM's answers over both runs
    are the rows."""
    args = ["--items", str(small_items), "--engine", "vllm", "--model", str(tiny_llm_dir)]
    args += ["--setups", "text", "--per-task", str(PER_TASK), "--max-tokens", "24"]
    args += ["--batch-size", str(BATCH), "--shard-rows", "1000"]
    out, reference, counts = tmp_path / "out", tmp_path / "reference", tmp_path / "answers"
    scenario = [sys.executable, "-m", "tests.pipelines.vllm_count_scenario", str(counts)]
    evaluate = ["evaluate", *args]
    stopped = Path(f"{counts}.stopped")
    settle: dict[str, float] = {}

    def answers_kept() -> bool:
        """The stop reached, and every answer vLLM made so far kept (or SETTLE_S gone)."""
        if not stopped.exists():
            return False
        settle.setdefault("since", time.monotonic())
        made = _decoded(counts)
        waited = time.monotonic() - settle["since"]
        return made > STOP_AFTER and (_kept(out) >= made or waited > SETTLE_S)

    run = _start([*scenario, str(STOP_AFTER), *evaluate, "--out", str(out)])
    code, stderr = _interrupt_when(run, answers_kept)
    assert code == 130, stderr[-3000:]
    first = _decoded(counts)
    saved = _saved(out)
    assert STOP_AFTER <= first < ROWS and saved < first  # answers still in Ray's hands
    made = rerun_counted([*scenario, "0", *evaluate], counts, out, reference, ROWS)
    print(f"vllm: {made} answers made for {ROWS} rows ({first} before the Ctrl-C, {saved} saved)")
