"""Ctrl-C keeps the rows the engine answered (issue 39, item 3): before, an engine's rows
waited in Ray's buffers until a whole shard (256 rows by default) was in, and a Ctrl-C kept
none of them (a 250-row run of the real model: 0 rows saved after 3.5 minutes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.noregeo.results import ShardWriter
from pipelines.noregeo.summarize import load_results
from store.held_rows import HeldRows
from tests.conftest import REPO
from tests.pipelines.raw_shards import raw_duplicates

TOTAL = 25 * 2 * 3  # tasks x --per-task x setups


def _signal_once_answered(argv: list[str], marker: Path, sig: signal.Signals) -> tuple[int, str]:
    """Run a scenario command; once its MARKER exists, signal its process group (a
    terminal's Ctrl-C); its exit code and stderr."""
    run = subprocess.Popen(
        argv,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A background job of a non-interactive shell starts with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 600
        while not marker.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "no answered row reached the driver"
        os.killpg(run.pid, sig)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    return run.returncode, stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_keeps_the_answered_rows_and_the_rerun_adds_the_rest(
    small_items: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    """The oracle in an actor pool, 0.5 s per engine call of 4 rows, shards of 1000 rows
    (more than the run's 150): once the driver holds answered rows, the signal, to the
    process group as `timeout` sends it (a SIGTERM that reached the raylet too ended the
    driver with exit 1 and the rows lost, pipelines.engines.session.ray_process_groups). The line
    counts them on disk; the same command adds the rest, each row once."""
    out, marker = tmp_path / "out", tmp_path / "answered"
    args = ["--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    args += ["--per-task", "2", "--batch-size", "4", "--shard-rows", "1000", "--out", str(out)]
    command = [sys.executable, "-m", "tests.pipelines.held_rows_scenario", str(marker)]
    code, stderr = _signal_once_answered([*command, *args, "--baseline-delay", "0.5"], marker, sig)
    assert code == 128 + sig, stderr[-3000:]
    saved = load_results(out, model="oracle")
    assert 0 < saved.height < TOTAL, stderr[-3000:]
    assert saved["correct"].all()  # the oracle's answers, scored
    last = stderr.strip().splitlines()[-1]
    verb = "interrupted" if sig == signal.SIGINT else "terminated"
    assert last.startswith(f"{verb}; {saved.height} rows saved in "), stderr[-3000:]

    rerun = subprocess.run(
        [*command, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    done = load_results(out, model="oracle")
    assert done["request_key"].n_unique() == done.height == TOTAL
    assert raw_duplicates(out / "noregeo" / "model=oracle") == 0


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    keys = [f"k{i:04d}" for i in range(start, start + n)]
    return [{"request_key": k, "setup": "text", "sampling_params": {}} for k in keys]


def test_full_shards_are_written_at_once_and_the_rest_on_flush(tmp_path: Path) -> None:
    writer = ShardWriter(str(tmp_path), "m", "r", "hf")
    held = HeldRows(writer, shard_rows=4)
    assert held.add(_rows(3)) == 0
    assert held.add(_rows(6, start=3)) == 8  # 9 held: two shards of 4, 1 left
    assert held.flush() == 1
    assert held.flush() == 0
    shards = sorted((tmp_path / "setup=text").glob("part-*.parquet"))
    assert len(shards) == 3
    assert sorted(
        pa.concat_tables([pq.read_table(s) for s in shards])["request_key"].to_pylist()
    ) == [f"k{i:04d}" for i in range(9)]


def test_close_writes_what_is_held_and_nothing_after(tmp_path: Path) -> None:
    """The signal watcher's save: a shard written after the interrupted line counted the
    shards on disk would make the line wrong, so rows added after `close` stay unwritten."""
    writer = ShardWriter(str(tmp_path), "m", "r", "hf")
    held = HeldRows(writer, shard_rows=4)
    held.add(_rows(3))
    assert held.close() == 3
    assert held.add(_rows(8, start=3)) == 0  # two shards' worth: not written
    assert held.flush() == 0
    shards = list((tmp_path / "setup=text").glob("part-*.parquet"))
    assert [pq.read_table(s).num_rows for s in shards] == [3]


GEOBUILD_PROBLEMS = 12


def test_ctrl_c_keeps_the_finished_conversations_of_a_geobuild_round(tmp_path: Path) -> None:
    """GeoBuild's rounds go through the same holding (issue 39): the solver's conversations,
    one per engine call, each 0.5 s slower in a Ray step, shards of 1000 (more than the 12
    conversations): once the driver holds finished ones, the signal. The line counts them on
    disk; the same command adds the rest, each conversation once. Before, a Ray step wrote
    the round's shard of --shard-rows: nothing reached the driver until the round's end."""
    from tests.conftest import SHARED

    out, marker = tmp_path / "out", tmp_path / "answered"
    data = str(SHARED / "geobuildbench")
    args = ["--dataset", data, "--engine", "solver", "--model", data]
    args += ["--first", str(GEOBUILD_PROBLEMS), "--max-rounds", "1"]
    args += ["--batch-size", "1", "--shard-rows", "1000", "--out", str(out)]
    command = [sys.executable, "-m", "tests.pipelines.geobuild_held_scenario", str(marker)]
    code, stderr = _signal_once_answered([*command, *args], marker, signal.SIGINT)
    assert code == 130, stderr[-3000:]
    shards = list((out / "geobuild").rglob("part-*.parquet"))
    saved = pl.read_parquet(shards) if shards else pl.DataFrame()
    assert 0 < saved.height < GEOBUILD_PROBLEMS, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted; {saved.height} rows saved in "), stderr[-3000:]

    rerun = subprocess.run(
        [*command, *args], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    done = pl.read_parquet(list((out / "geobuild").rglob("part-*.parquet")))
    assert done["problem_id"].n_unique() == done.height == GEOBUILD_PROBLEMS
