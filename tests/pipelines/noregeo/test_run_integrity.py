"""One writer per results folder, late shards of a dead run, the settings record, missing
rows in the summary, and bounded loss for the baselines (store.run_lock, run_settings,
baseline_step)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.cli import UsageError, main
from pipelines.noregeo.results import ShardWriter
from pipelines.noregeo.summarize import load_results
from pipelines.sweep.plan import keys_on_disk, rows_on_disk
from store.records import model_dir
from store.run_lock import LOCK_FILE, STALE_AFTER_S, RunLock
from store.settings import SETTINGS_FILE
from store.shards import QUARANTINE, shard_files
from tests.pipelines.processes import kill_evaluate_after
from tests.pipelines.raw_shards import raw_duplicates

TASKS = "C-BCT-CT,N-ECL-SLT"


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _write_lock(folder: Path, **fields: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"pid": os.getpid(), "host": socket.gethostname(), "token": "t", **fields}
    path = folder / LOCK_FILE
    path.write_text(json.dumps(record))
    return path


# -- the lock ------------------------------------------------------------------------------
def test_a_live_lock_refuses_a_second_run_naming_the_holder(tmp_path: Path) -> None:
    folder = tmp_path / "noregeo" / "model=m"
    with RunLock(folder, command="first"), pytest.raises(UsageError) as err:
        RunLock(folder).acquire()
    message = str(err.value)
    assert "\n" not in message
    assert f"pid {os.getpid()} on {socket.gethostname()}" in message and "first" in message
    assert "another --out" in message
    assert not (folder / LOCK_FILE).exists()  # released on exit


@pytest.mark.parametrize(
    ("fields", "mtime_age", "stale"),
    [
        ({"pid": "dead"}, 0, True),  # this host, pid gone
        ({"pid_start": "no-such-start"}, 0, True),  # this host, pid reused by another process
        ({}, 0, False),  # this host, pid alive
        ({"host": "elsewhere"}, 0, False),  # another host, fresh heartbeat
        ({"host": "elsewhere"}, STALE_AFTER_S + 60, True),  # another host, heartbeat stopped
    ],
)
def test_a_stale_lock_is_taken_over_and_a_live_one_is_not(
    tmp_path: Path, fields: dict[str, object], mtime_age: float, stale: bool
) -> None:
    folder = tmp_path / "model=m"
    if fields.get("pid") == "dead":
        fields = {**fields, "pid": _dead_pid()}
    path = _write_lock(folder, **fields)
    old = time.time() - mtime_age
    os.utime(path, (old, old))
    lock = RunLock(folder)
    if not stale:
        with pytest.raises(UsageError, match="being written by another run"):
            lock.acquire()
        assert json.loads(path.read_text())["token"] == "t"  # left as it was
        return
    with lock:
        assert json.loads(path.read_text())["token"] == lock.token
    assert not path.exists()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\x00\xffgarbage{", "not JSON"),
        (b"[1, 2]", "JSON list, not an object"),
        (b'{"pid": "abc", "host": "h", "token": "t"}', "'pid' is \"abc\""),
        (b'{"pid": true, "host": "h", "token": "t"}', "'pid' is true"),
        (b'{"pid": -5, "host": "h", "token": "t"}', "'pid' is -5"),
        (b'{"pid": 1, "host": 7, "token": "t"}', "'host' is 7"),
    ],
)
def test_an_unreadable_lock_is_refused_while_fresh_and_taken_over_when_stale(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, why: str
) -> None:
    """Issue 26: garbage was silently taken over, `"pid": "abc"` was a traceback. The rule:
    no holder to check, so stale only when untouched for STALE_AFTER_S (heartbeats)."""
    folder = tmp_path / "model=m"
    folder.mkdir()
    path = folder / LOCK_FILE
    path.write_bytes(content)
    with pytest.raises(UsageError) as err:
        RunLock(folder).acquire()
    message = str(err.value)
    assert "\n" not in message and str(path) in message and why in message, message
    assert path.read_bytes() == content  # left as it was
    old = time.time() - STALE_AFTER_S - 60
    os.utime(path, (old, old))
    with RunLock(folder) as lock:
        assert json.loads(path.read_text())["token"] == lock.token
    assert str(path) in caplog.text and "taking over the unreadable lock" in caplog.text
    assert not path.exists()


def test_an_empty_lock_is_a_run_killed_while_writing_it_and_is_taken_over(tmp_path: Path) -> None:
    folder = tmp_path / "model=m"
    folder.mkdir()
    (folder / LOCK_FILE).write_bytes(b"")
    with RunLock(folder) as lock:
        assert json.loads((folder / LOCK_FILE).read_text())["token"] == lock.token


def test_a_directory_in_the_locks_place_is_one_line_naming_it(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    lock = model_dir(out, "noregeo", "oracle") / LOCK_FILE
    (lock / "inside").mkdir(parents=True)
    assert _evaluate(small_items, out) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and str(lock) in lines[0] and "a directory" in lines[0], lines
    assert (lock / "inside").is_dir()  # nothing of the user's removed
    assert sorted(p.name for p in lock.parent.iterdir()) == [LOCK_FILE]


def test_a_refused_start_leaves_no_folder_behind(tmp_path: Path) -> None:
    out = tmp_path / "results"
    lock = RunLock(out / "noregeo" / "model=m")
    with lock:
        pass
    assert not out.exists()


def _rows(n: int) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"item_id": f"i{k}", "task": "N-ECL-SLT", "setup": "text", "request_key": f"k{k}"}
            | {"sampling_params": {"temperature": 0.0}, "valid": True, "correct": True}
            for k in range(n)
        ]
    )


def test_a_writer_whose_run_lost_the_lock_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "model=m"
    with RunLock(root) as lock:
        writer = ShardWriter(str(root), "m", "rev", "oracle", token=lock.token)
        assert writer(_rows(3))["rows"].tolist() == [3]  # while its run holds the lock
        assert len(shard_files(root)) == 1
        _write_lock(root, token="a-new-run")  # another run took the folder over
        assert writer(_rows(5))["rows"].tolist() == [0]
    _write_lock(root, token=lock.token, pid=_dead_pid())  # its own run, dead
    assert writer(_rows(6))["rows"].tolist() == [0]
    (root / LOCK_FILE).unlink()  # no run holds the folder
    assert writer(_rows(7))["rows"].tolist() == [0]
    assert len(shard_files(root)) == 1
    assert not list(root.rglob(".tmp-*"))  # refused temporaries removed


def test_a_signal_releases_the_lock_so_no_shard_lands_after_the_count(tmp_path: Path) -> None:
    """The save a signal runs (pipelines.terminal.interrupt.kept_on_exit) while the run's
    writers, a baseline's in Ray tasks, may still finish: after it they write nothing."""
    root = tmp_path / "model=m"
    with RunLock(root) as lock:
        writer = ShardWriter(str(root), "m", "rev", "oracle", token=lock.token)
        assert writer(_rows(3))["rows"].tolist() == [3]
        lock.release_on_signal()
        assert not (root / LOCK_FILE).exists()
        assert writer(_rows(5))["rows"].tolist() == [0]
    assert len(shard_files(root)) == 1


def _evaluate(items: Path, out: Path, *extra: str) -> int:
    args = ["--items", str(items), "--engine", "oracle", "--model", "oracle", "--tasks", TASKS]
    return main(["evaluate", *args, "--per-task", "3", *extra, "--out", str(out)])


def _listing(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_evaluate_refuses_a_folder_a_live_run_holds_and_writes_nothing(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _evaluate(small_items, out) == 0
    root = model_dir(out, "noregeo", "oracle")
    for shard in shard_files(root):  # so a run that got through would have rows to write
        shard.unlink()
    capsys.readouterr()
    with RunLock(root, command="a running evaluate"):
        before = _listing(out)
        assert _evaluate(small_items, out) == 2
        assert _listing(out) == before
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a running evaluate" in err, err


def test_other_settings_in_one_folder_are_refused_naming_the_field(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _evaluate(small_items, out, "--max-tokens", "64") == 0
    root = model_dir(out, "noregeo", "oracle")
    settings = (root / SETTINGS_FILE).read_text()
    capsys.readouterr()
    before = _listing(out)
    assert _evaluate(small_items, out, "--max-tokens", "128") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "sampling=" in err and "'max_tokens': 64" in err and "use another --out" in err
    assert _listing(out) == before
    assert (root / SETTINGS_FILE).read_text() == settings
    assert not (root / LOCK_FILE).exists()
    # The same settings again: accepted, nothing new to write.
    assert _evaluate(small_items, out, "--max-tokens", "64") == 0


def test_summary_reports_missing_rows_and_a_copied_shard_changes_no_n(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _evaluate(small_items, out) == 0
    root = model_dir(out, "noregeo", "oracle")
    full = load_results(out, model="oracle").height
    assert full == 2 * 3 * 3  # 2 tasks x 3 items x 3 setups
    shards = shard_files(root)
    shutil.copy(shards[0], shards[0].with_name("part-zzzz-copy.parquet"))
    lost = pq.read_metadata(shards[-1]).num_rows
    shards[-1].unlink()
    capsys.readouterr()
    assert main(["summarize", str(out)]) == 0
    captured = capsys.readouterr()
    warnings = [ln for ln in captured.err.splitlines() if ln.startswith("warning: model oracle")]
    assert len(warnings) == 1
    assert f"{lost} of {full} expected rows missing" in warnings[0]
    assert "missing" in captured.out
    assert load_results(out, model="oracle").height == full - lost  # the copy counts once
    # The report says so too, in a section of its own.
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    table = pl.read_csv(tmp_path / "report" / "tables" / "missing_rows.csv")
    assert table["missing"].sum() == lost and set(table["model"]) == {"oracle"}


def test_sweep_plan_quarantines_a_corrupt_shard(small_items: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    assert _evaluate(small_items, out, "--setups", "text") == 0
    root = model_dir(out, "noregeo", "oracle")
    keys = keys_on_disk(out, "oracle", "text")
    assert len(keys) == rows_on_disk(out, "oracle", "text") == 2 * 3
    bad = root / "setup=text" / "part-bad.parquet"
    bad.write_bytes(b"not parquet " * 40)
    assert rows_on_disk(out, "oracle", "text") == 2 * 3
    bad.write_bytes(b"not parquet " * 40)
    assert keys_on_disk(out, "oracle", "text") == keys
    assert not bad.exists()
    assert len(list((root / QUARANTINE).iterdir())) == 2


# -- bounded loss for the baselines --------------------------------------------------------
class _CountingOracle:
    """The oracle, noting before each engine call how many shards are on disk already."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root, self.log = root, log

    def __call__(self, batch: pa.Table) -> pa.Table:
        from actors.baselines import OracleEngine

        with self.log.open("a") as f:
            f.write(f"{len(shard_files(self.root)) if self.root.exists() else 0}\n")
        return OracleEngine()(batch)


def test_baseline_shards_land_before_the_engines_last_call(
    small_items: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ordering, not timing: one item file is one Ray task; had its rows been buffered into
    one block before the writer (as they were), no shard would exist at any engine call."""
    import pipelines.noregeo.evaluate_pipeline as pipeline_module

    out, log = tmp_path / "results", tmp_path / "calls.txt"
    root = model_dir(out, "noregeo", "oracle")
    monkeypatch.setattr(
        pipeline_module, "baseline_engine", lambda engine, delay: _CountingOracle(root, log)
    )
    args = ["--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    args += ["--tasks", "N-ECL-SLT", "--batch-size", "6", "--shard-rows", "6"]
    assert main(["evaluate", *args, "--out", str(out)]) == 0
    seen = [int(n) for n in log.read_text().split()]
    assert len(seen) == 20 * 3 // 6  # one call per shard's rows
    assert seen[-1] > 0, seen
    assert load_results(out, model="oracle").height == 20 * 3


def test_a_killed_baseline_run_has_written_shards_before_its_end(
    small_items: Path, tmp_path: Path
) -> None:
    """One item file (one task): its rows were one block, and the writer saw them only at
    the end of the file. Now shards land as the run goes: after a kill at the second shard,
    some rows and not all are on disk."""
    args = ["--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    args += ["--tasks", "N-ECL-SLT", "--batch-size", "6", "--shard-rows", "6"]
    args += ["--baseline-delay", "0.5"]  # 10 engine calls of 6 rows, 0.5 s each
    out = tmp_path / "killed"
    root = model_dir(out, "noregeo", "oracle")
    outcome = kill_evaluate_after([*args, "--out", str(out)], root)
    assert outcome == "killed", outcome
    rows = load_results(out, model="oracle").height
    assert 0 < rows < 20 * 3, rows
    # The resumed run takes over the dead run's lock and fills in the rest, none twice.
    assert main(["evaluate", *args, "--baseline-delay", "0", "--out", str(out)]) == 0
    assert load_results(out, model="oracle").height == 20 * 3
    assert raw_duplicates(root) == 0
