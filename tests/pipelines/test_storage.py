"""Results on an object store (store.storage) against a real S3 server on loopback:
paths, atomic writes, the shard reader, the run lock, and a killed-and-resumed run with 0
lost and 0 duplicate rows."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.cli import UsageError, main
from pipelines.command_line.args import output_location
from pipelines.noregeo.summarize import load_results
from store.atomic import write_bytes_atomic, write_parquet_atomic
from store.records import finished_keys, model_dir
from store.run_lock import LOCK_FILE, RunLock, writing_allowed
from store.shards import QUARANTINE, read_shards, shard_files
from store.storage import RemotePath, StorageURIError, location, move
from tests.conftest import REPO, SHARED
from tests.pipelines.processes import kill_evaluate_after
from tests.pipelines.raw_shards import raw_duplicates, raw_keys
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)


def _remote(s3: S3Server, prefix: str) -> RemotePath:
    path = location(s3.uri(prefix))
    assert isinstance(path, RemotePath)
    return path


def _cli(*argv: str) -> int:
    """`python -m pipelines ARGV` in a process of its own: its Ray workers start with this
    environment, S3 credentials included (the session's Ray may have started before the
    `s3` fixture set them, and its workers would write unsigned, which moto stores in
    aws-chunked framing rather than decoded)."""
    run = subprocess.run([sys.executable, "-m", "pipelines", *argv], cwd=REPO, env=os.environ)
    return run.returncode


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- local atomic writes --------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_an_atomic_write_gets_the_mode_the_umask_gives(tmp_path: Path, umask: int) -> None:
    """mkstemp's temporaries are 0600 whatever the umask; after the rename a results file
    or report page must have the mode open() would give it (0644 under umask 022)."""
    old = os.umask(umask)
    try:
        assert write_bytes_atomic(tmp_path / "page.html", b"<p>")
        write_parquet_atomic(tmp_path / "part.parquet", _rows(["k1"]))
        (tmp_path / "plain.txt").write_bytes(b"open() with the same umask")
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    assert (tmp_path / "plain.txt").stat().st_mode & 0o777 == expected
    for name in ("page.html", "part.parquet"):
        assert (tmp_path / name).stat().st_mode & 0o777 == expected, name


# -- URIs ----------------------------------------------------------------------------------
def test_a_uri_round_trips_through_its_text_and_joins_like_a_path(s3: S3Server) -> None:
    root = _remote(s3, "paths/run")
    child = root / "noregeo" / "model=m"
    assert location(str(child)) == child  # what a Ray worker rebuilds from the text
    assert child.name == "model=m" and child.parent.parent == root
    assert child.relative_to(root).parts == ("noregeo", "model=m")
    assert [p.name for p in child.parents[:2]] == ["noregeo", "run"]
    assert str(root).startswith(f"s3://{s3.bucket}/paths/run?")
    assert location("file:///tmp/x") == Path("/tmp/x") and location("rel/dir") == Path("rel/dir")


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("s3://AKIA:secret@bucket/results", "credentials"),
        ("s3://bucket/results?access_key=AKIA&secret_key=x", "access_key, secret_key"),
        ("s3://bucket/../elsewhere", "'..'"),
        ("ftp://host/results", "a local path or a URI of s3"),
    ],
)
def test_a_bad_uri_is_refused_naming_why_without_echoing_a_secret(uri: str, says: str) -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError) as err:
        output_location(uri)
    assert says in str(err.value)
    assert "secret" not in str(err.value).replace("secret_key", "")


def test_a_store_that_cannot_be_reached_is_a_usage_error_naming_the_uri() -> None:
    with pytest.raises(StorageURIError) as err:
        location("s3://bucket/x?no_such_option=1").exists()
    assert "s3://bucket" in str(err.value)
    assert isinstance(err.value, UsageError)


# -- files ---------------------------------------------------------------------------------
def test_files_and_folders_on_the_store(s3: S3Server) -> None:
    root = _remote(s3, "files")
    assert not root.exists() and not root.is_dir()
    assert write_bytes_atomic(root / "a" / "one.json", b"1")
    (root / "a" / "b" / "two.json").write_bytes(b"22")
    assert root.is_dir() and (root / "a" / "one.json").is_file()
    assert (root / "a" / "one.json").read_text() == "1"
    assert [p.name for p in root.glob("*")] == ["a"]
    assert sorted(p.name for p in root.rglob("*.json")) == ["one.json", "two.json"]
    move(root / "a" / "one.json", root / "moved.json")
    assert not (root / "a" / "one.json").exists() and (root / "moved.json").read_bytes() == b"1"
    (root / "moved.json").unlink()
    (root / "moved.json").unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError):
        (root / "moved.json").unlink()
    mtime = (root / "a" / "b" / "two.json").mtime()
    assert mtime is not None and mtime > 0


def _rows(keys: list[str], error: str | None = None) -> pa.Table:
    return pa.table(
        {"request_key": keys, "value": list(range(len(keys))), "engine_error": [error] * len(keys)}
    )


def test_the_shard_reader_on_the_store_dedupes_and_quarantines(s3: S3Server) -> None:
    root = _remote(s3, "reader") / "noregeo" / "model=m"
    write_parquet_atomic(root / "setup=text" / "part-a.parquet", _rows(["k1", "k2"]))
    write_parquet_atomic(root / "setup=text" / "part-b.parquet", _rows(["k2", "k3"]))
    (root / "setup=text" / "part-c.parquet").write_bytes(b"PAR1 truncated")
    rows = read_shards(root, ["request_key", "value"])
    assert rows is not None
    assert sorted(rows["request_key"].to_list()) == ["k1", "k2", "k3"]  # k2 once
    # The truncated shard moved aside, under the model folder, and out of the listing.
    assert [p.name for p in (root / QUARANTINE).glob("*")] == ["setup=text__part-c.parquet"]
    assert len(shard_files(root)) == 2
    assert finished_keys(root) == {"k1", "k2", "k3"}


def test_an_error_row_is_unfinished_on_the_store_too(s3: S3Server) -> None:
    root = _remote(s3, "errors") / "noregeo" / "model=m"
    write_parquet_atomic(root / "setup=text" / "part-a.parquet", _rows(["k1"]))
    write_parquet_atomic(root / "setup=text" / "part-b.parquet", _rows(["k2"], "transient: 503"))
    assert finished_keys(root) == {"k1"}
    assert finished_keys(root, retry="none") == {"k1", "k2"}


# -- the lock ------------------------------------------------------------------------------
def test_the_lock_on_the_store_refuses_a_second_run_and_guards_writers(s3: S3Server) -> None:
    folder = _remote(s3, "lock") / "noregeo" / "model=m"
    with RunLock(folder, command="first") as lock:
        holder = json.loads((folder / LOCK_FILE).read_text())
        assert holder["token"] == lock.token and holder["command"] == "first"
        with pytest.raises(UsageError) as err:
            RunLock(folder).acquire()
        assert f"pid {os.getpid()} on {socket.gethostname()}" in str(err.value)
        with writing_allowed(folder, lock.token) as ours:
            assert ours
        with writing_allowed(folder, "another token") as theirs:
            assert not theirs
        guard_refused = not write_parquet_atomic(
            folder / "setup=text" / "part-late.parquet",
            _rows(["late"]),
            lambda: writing_allowed(folder, "another token"),
        )
        assert guard_refused and not (folder / "setup=text" / "part-late.parquet").exists()
    assert not (folder / LOCK_FILE).exists()  # released on exit
    with writing_allowed(folder, lock.token) as after_release:
        assert not after_release


def test_a_dead_runs_lock_on_the_store_is_taken_over(s3: S3Server) -> None:
    folder = _remote(s3, "stale") / "noregeo" / "model=m"
    dead = {"pid": _dead_pid(), "host": socket.gethostname(), "token": "old", "command": "x"}
    (folder / LOCK_FILE).write_bytes(json.dumps(dead).encode())
    with RunLock(folder) as lock:
        assert json.loads((folder / LOCK_FILE).read_text())["token"] == lock.token
        with writing_allowed(folder, "old") as old_writer:
            assert not old_writer


# -- a run -----------------------------------------------------------------------------------
def test_a_killed_run_on_the_store_resumes_with_nothing_lost_or_doubled(
    small_items: Path, s3: S3Server, tmp_path: Path
) -> None:
    """evaluate writes to s3:// (shards, run records, settings, lock); SIGKILLed after two
    shards, then resumed: every expected row once, summarize reads the URI."""
    args = ["--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    args += ["--tasks", "N-ECL-SLT", "--batch-size", "6", "--shard-rows", "6"]
    out = s3.uri("killed")
    root = model_dir(location(out), "noregeo", "oracle")
    outcome = kill_evaluate_after([*args, "--baseline-delay", "0.5", "--out", out], root)
    assert outcome == "killed", outcome
    before = raw_keys(root)
    assert 0 < len(before) < 20 * 3, len(before)
    assert _cli("evaluate", *args, "--out", out) == 0
    keys = raw_keys(root)
    assert len(keys) == 20 * 3 and raw_duplicates(root) == 0  # 0 lost, 0 doubled
    assert set(before) <= set(keys)
    assert load_results(location(out), model="oracle").height == 20 * 3
    assert len(list((root / "runs").glob("*.json"))) == 2
    assert (root / "settings.json").is_file() and not (root / LOCK_FILE).exists()
    assert main(["summarize", out]) == 0
    assert main(["report", out, "--out", str(tmp_path / "report")]) == 0


def test_geobuild_writes_and_summarizes_on_the_store(s3: S3Server) -> None:
    """GeoBuild's rounds, settings and run records on s3://, read back by its summary."""
    from pipelines.geobuild.rows import read_round

    data = SHARED / "geobuildbench"
    if not data.is_dir():
        pytest.skip(f"GeoBuild data not at {data}")
    out = s3.uri("geobuild")
    argv = ["geobuild", "--dataset", str(data), "--engine", "solver", "--model", str(data)]
    argv += ["--ids", "367,370", "--max-rounds", "2", "--shard-rows", "2", "--out", out]
    assert _cli(*argv) == 0
    root = model_dir(location(out), "geobuild", "solver")
    rows = read_round(root, 1)
    assert sorted(rows["problem_id"].to_list()) == ["367", "370"] and rows["success"].all()
    assert (root / "settings.json").is_file() and not (root / LOCK_FILE).exists()
    assert main(["geobuild-summarize", out]) == 0
