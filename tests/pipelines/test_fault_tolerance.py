"""Fault tolerance: an engine actor killed with SIGKILL in the middle of `evaluate` is
replaced by Ray Data, and the run ends with the rows of an uninterrupted run, none lost and
none twice."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from geometry.item import SETUPS
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.engines.session.ray_reaper import descendants
from pipelines.engines.stages.engine_stages import oracle_actor_stage
from pipelines.engines.stages.options import EngineOptions
from pipelines.noregeo.evaluate_pipeline import evaluate
from pipelines.noregeo.generate import generate
from pipelines.noregeo.run_settings import EvaluateSettings
from pipelines.noregeo.summarize import load_results
from store.records import model_dir

TASKS = ["C-BCT-CT", "U-PAP-PT"]
PER_TASK = 8
ROWS = len(TASKS) * PER_TASK * len(SETUPS)
BATCH = 2  # 24 engine calls: the kill lands with most of them still to come
DELAY_S = 0.7  # per engine call: about 17 s of engine time in all
TIMING = ["time_taken_llm"]  # the only column a rerun may change


def _engine_worker_pids(name: str) -> list[int]:
    """Workers of our own Ray instance whose process title names the engine class.

    Ray titles an actor's process after its repr, `ray::MapWorker(MapBatches(<class>))`;
    only descendants of this process qualify, so other sessions' workers are never touched.
    """
    pids = []
    for pid in descendants(os.getpid()):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if title.startswith("ray::") and f"MapBatches({name})" in title:
            pids.append(pid)
    return pids


def _shards(out: Path) -> list[Path]:
    return sorted(model_dir(out, "noregeo", "oracle").rglob("part-*.parquet"))


@pytest.fixture(scope="module")
def items(ray_local, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ft_items")
    generate(out, TASKS, per_task=PER_TASK, seed=0, setups=list(SETUPS), image_size=64)
    return out


def _evaluate(items: Path, out: Path, delay_s: float) -> int:
    run = EvaluateSettings(
        tasks=TASKS,
        setups=list(SETUPS),
        sampling=SamplingConfig(max_tokens=64),
        engine_options=EngineOptions(pool_size=1, batch_size=BATCH, baseline_delay_s=delay_s),
        shard_rows=BATCH,  # a shard per engine call: progress shows on disk early
    )
    return evaluate(
        sorted(items.glob("part-*.parquet")),
        resolve_model("oracle", "oracle"),
        run,
        out,
        engine_stage=oracle_actor_stage,  # actors, as model engines run (baselines are tasks)
    )


@pytest.mark.slow  # about 40 s on two busy cores
def test_killed_engine_actor_is_replaced_and_no_row_is_lost_or_doubled(
    ray_local, items: Path, tmp_path: Path
) -> None:
    reference_out = tmp_path / "reference"
    assert _evaluate(items, reference_out, 0.0) == ROWS
    reference = load_results(reference_out, model="oracle")

    out = tmp_path / "killed"
    written: list[int] = []
    errors: list[BaseException] = []

    def body() -> None:
        try:
            written.append(_evaluate(items, out, DELAY_S))
        except BaseException as err:  # re-raised in the test thread below
            errors.append(err)

    runner = threading.Thread(target=body, daemon=True)
    runner.start()
    deadline = time.monotonic() + 60
    while not _shards(out) or not _engine_worker_pids("OracleEngine"):
        assert runner.is_alive(), f"the run ended before the kill: {errors}"
        assert time.monotonic() < deadline, "no shard or no local engine worker in 60 s"
        time.sleep(0.2)
    victims = _engine_worker_pids("OracleEngine")
    assert len(victims) == 1  # pool_size 1: the one engine replica
    os.kill(victims[0], signal.SIGKILL)
    # A shard holds one setup's rows of a batch, so count rows, not shards.
    rows_at_kill = sum(pq.read_metadata(s).num_rows for s in _shards(out))

    replaced: list[int] = []  # Ray restarts the actor in a new worker process
    while runner.is_alive() and not replaced and time.monotonic() < deadline + 60:
        replaced = [p for p in _engine_worker_pids("OracleEngine") if p != victims[0]]
        time.sleep(0.2)
    runner.join(timeout=120)
    assert not runner.is_alive(), "the run did not finish within 120 s of the kill"
    if errors:
        raise AssertionError("the run failed after the kill") from errors[0]
    assert rows_at_kill < ROWS  # the kill came before the end
    assert replaced, "no new engine worker appeared after the kill"

    assert written == [ROWS]
    rows = load_results(out, model="oracle")
    assert rows.height == ROWS
    assert rows["request_key"].n_unique() == ROWS
    assert rows["correct"].all()
    key = "request_key"
    got = rows.drop(TIMING).sort(key)
    want = reference.drop(TIMING).sort(key)
    assert got.columns == want.columns
    assert got.equals(want)
    # A rerun finds every key on disk and writes nothing.
    assert _evaluate(items, out, 0.0) == 0
    assert load_results(out, model="oracle").height == ROWS
