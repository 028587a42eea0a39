"""Issue 38: a disk that fills up mid-run ends the command with one line naming the folder,
the bytes the write needed and the bytes free there, exit 1, and the same command resumes
once there is room.

The end-to-end run fills a small tmpfs in a private mount namespace (root only; `make
stress`); the suite checks the pieces it rests on without a new Ray start: a shard written
onto a full tmpfs (root only, no Ray) says its size, the driver-side error of a Ray
worker's full disk is recognised with that size, and main turns it into the one line. The
size each test expects is the shard's, computed here (store.atomic.parquet_bytes)."""

from __future__ import annotations

import errno
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipelines.cli import main
from pipelines.command_line.disk_failure import amount, disk_failure
from store import atomic
from tests.conftest import REPO
from tests.pipelines.ray_nodes import needs_private_mounts


def shard_table() -> pa.Table:
    """A shard of 100 KB that zstd cannot shrink (seeded random bytes): more than the
    64 KiB tmpfs below holds."""
    rng = random.Random(38)
    return pa.table({"blob": [rng.randbytes(1000) for _ in range(100)]})


def shard_size() -> int:
    """The bytes the shard's file takes: what the line must say the write needed."""
    return len(atomic.parquet_bytes(shard_table()))


class FullDisk:
    """store.atomic's `os`, but fsync fails as a full disk's does (a file system that
    delays allocation refuses the data when it is flushed)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _write_onto_full_disk(shard: str) -> Any:
    def write(batch: Any) -> Any:
        atomic.os = FullDisk()  # type: ignore[assignment]  # this Ray worker's only
        try:
            atomic.write_parquet_atomic(Path(shard), shard_table())
        finally:
            atomic.os = os  # the worker serves later tests
        return batch

    return write


def test_a_ray_workers_full_disk_is_recognised_in_the_drivers_error(
    ray_local: Any, tmp_path: Path
) -> None:
    # Ray Data hands the driver a UserCodeException without the worker's OSError object,
    # only its text: the old check, by exception type, missed it (45 lines of traceback).
    shard = tmp_path / "setup=text" / "part-x.parquet"
    with pytest.raises(Exception) as raised:
        ray_local.data.range(1).map_batches(_write_onto_full_disk(str(shard))).materialize()
    assert not isinstance(raised.value, OSError)
    line = disk_failure(raised.value, [])
    assert line is not None and line.startswith(
        f"no space left on the device writing under {tmp_path}/setup=text; "
        f"needs about {amount(shard_size())}, "
    )
    assert line.endswith("free there")
    assert not any(shard.parent.iterdir())  # the temporary is gone: the rerun starts clean


def test_main_says_one_line_with_the_resume_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipelines.noregeo import generate

    def full(out: Path, *args: object, **kwargs: object) -> None:
        atomic.write_parquet_atomic(out / "part-C-BCT-CT.parquet", shard_table())

    monkeypatch.setattr(atomic, "os", FullDisk())
    monkeypatch.setattr(generate, "generate", full)
    out = tmp_path / "items"
    assert main(["generate", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(
        f"error: no space left on the device writing under {out}; "
        f"needs about {amount(shard_size())}, "
    )
    assert "free there; " in err and "resume with: " in err


def test_a_journal_record_onto_a_full_disk_says_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # geobuild-solve's per-problem record (store.journal), its size as JSON plus a newline.
    from store import journal

    record = {"id": "367", "status": "solved", "program": "x" * 3000}
    needed = len(json.dumps(record, ensure_ascii=False).encode()) + 1
    monkeypatch.setattr(journal, "os", FullDisk())
    log = journal.Journal(tmp_path / "audit" / "results.jsonl")
    with log, pytest.raises(OSError) as raised:
        log.append(record)
    line = disk_failure(raised.value, [])
    assert line is not None and line.startswith(
        f"no space left on the device writing under {tmp_path / 'audit'}; "
        f"needs about {amount(needed)}, "
    )


def test_a_full_disk_without_a_known_size_says_the_free_bytes_only(tmp_path: Path) -> None:
    # Someone else's write (Ray spilling, a download): no size in the error.
    line = disk_failure(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), [tmp_path])
    assert line is not None and "needs" not in line
    assert line.startswith(f"no space left on the device writing under {tmp_path}; ")
    assert re.search(r"; \d+ bytes.* free there$", line), line


@needs_private_mounts
def test_a_shard_onto_a_full_tmpfs_says_the_bytes_it_needed(tmp_path: Path) -> None:
    """The kernel's own ENOSPC, no Ray: a 100 KB shard onto a 64 KiB tmpfs."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    write = (
        "import sys; from pathlib import Path; from store.atomic import write_parquet_atomic; "
        "from pipelines.command_line.disk_failure import disk_failure; "
        "from tests.pipelines.test_disk_full import shard_table\n"
        "try:\n"
        f"    write_parquet_atomic(Path('{mount}/results/part-x.parquet'), shard_table())\n"
        "except OSError as err:\n"
        "    print(disk_failure(err, []))\n"
        f"print(sorted(p.name for p in Path('{mount}/results').iterdir()))"
    )
    script = f'mount -t tmpfs -o size=64k tmpfs {mount} && {sys.executable} -c "{write}"'
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    line, listing = done.stdout.strip().splitlines()
    prefix = (
        f"no space left on the device writing under {mount}/results; "
        f"needs about {amount(shard_size())}, "
    )
    assert line.startswith(prefix), (line, done.stderr)
    free = re.fullmatch(r"(\d+) bytes.* free there", line.removeprefix(prefix))
    assert free is not None and int(free[1]) < shard_size(), line
    assert listing == "[]"  # no temporary left: the rerun resumes on a clean folder


def test_an_unrelated_oserror_still_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.noregeo import generate

    def denied(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EIO, "disk on fire")

    monkeypatch.setattr(generate, "generate", denied)
    with pytest.raises(OSError, match="disk on fire"):
        main(["generate", "--out", str(tmp_path / "items")])


EVALUATE = [
    *(sys.executable, "-m", "pipelines", "evaluate", "--engine", "random", "--model", "random"),
    *("--tasks", "C-BCT-CT,N-ECL-SLT", "--setups", "text", "--shard-rows", "4"),
]


@pytest.mark.stress
@needs_private_mounts
def test_a_full_tmpfs_mid_run_is_one_line_and_the_rerun_completes(
    small_items: Path, tmp_path: Path
) -> None:
    """40 rows in shards of 4 (13 KB each) onto a 64 KB tmpfs: some shards are written,
    then the disk is full; once it grows, the same command ends with every row once."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    run = " ".join([*EVALUATE, "--items", str(small_items), "--out", str(mount / "results")])
    count = (
        f"{sys.executable} -c \"import polars as pl; d = pl.read_parquet('{mount}/results/"
        f"noregeo/**/*.parquet'); print(d.height, d['request_key'].n_unique())\""
    )
    script = (
        f"mount -t tmpfs -o size=64k tmpfs {mount} && {{ {run} 2>{tmp_path}/err1; "
        f"echo rc=$?; mount -o remount,size=8m {mount}; {run} >/dev/null 2>{tmp_path}/err2; "
        f"echo rc=$?; {count}; }}"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = done.stdout.strip().splitlines()
    assert lines[-3:] == ["rc=1", "rc=0", "40 40"], (done.stdout, done.stderr)
    err = (tmp_path / "err1").read_text()
    # Besides the progress lines (stderr when it is not a terminal), the one error line.
    errors = [line for line in err.splitlines() if not line.startswith("evaluate random: ")]
    assert len(errors) == 1 and errors[0].startswith("error: no space left on the device"), err
    assert str(mount) in errors[0] and "resume with: " in errors[0]
    # A shard's bytes (about 13 KB): the write that found the disk full was one of them.
    needed = re.search(r"; needs about (\d+) bytes", errors[0])
    assert needed is not None and 4_000 < int(needed[1]) < 64_000, errors[0]
