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

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.noregeo.held_rows import HeldRows
from pipelines.noregeo.results import ShardWriter
from pipelines.noregeo.summarize import load_results
from tests.conftest import REPO
from tests.pipelines.raw_shards import raw_duplicates

TOTAL = 25 * 2 * 3  # tasks x --per-task x setups


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_keeps_the_answered_rows_and_the_rerun_adds_the_rest(
    small_items: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    """The oracle in an actor pool, 0.5 s per engine call of 4 rows, shards of 1000 rows
    (more than the run's 150): once the driver holds answered rows, the signal. The line
    counts them on disk; the same command adds the rest, each row once."""
    out, marker = tmp_path / "out", tmp_path / "answered"
    args = ["--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    args += ["--per-task", "2", "--batch-size", "4", "--shard-rows", "1000", "--out", str(out)]
    command = [sys.executable, "-m", "tests.pipelines.held_rows_scenario", str(marker)]
    run = subprocess.Popen(
        [*command, *args, "--baseline-delay", "0.5"],
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
    assert run.returncode == 128 + sig, stderr[-3000:]
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


def _rows(n: int, start: int = 0) -> pa.Table:
    keys = [f"k{i:04d}" for i in range(start, start + n)]
    return pa.table({"request_key": keys, "setup": ["text"] * n, "sampling_params": [{}] * n})


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
