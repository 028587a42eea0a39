"""Issue 38: a disk that fills up mid-run ends the command with one line naming the folder
and the bytes free there, exit 1, and the same command resumes once there is room.

The end-to-end run fills a small tmpfs in a private mount namespace (root only; `make
stress`); the suite checks the two pieces it rests on without a new Ray start: the
driver-side error of a Ray worker's full disk is recognised, and main turns it into the
one line."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipelines.cli import main
from pipelines.disk_failure import disk_failure
from tests.conftest import REPO


def _fill(path: str) -> Any:
    def write(batch: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    return write


def test_a_ray_workers_full_disk_is_recognised_in_the_drivers_error(
    ray_local: Any, tmp_path: Path
) -> None:
    # Ray Data hands the driver a UserCodeException without the worker's OSError object,
    # only its text: the old check, by exception type, missed it (45 lines of traceback).
    shard = tmp_path / "setup=text" / "part-x.parquet"
    with pytest.raises(Exception) as raised:
        ray_local.data.range(2).map_batches(_fill(str(shard))).materialize()
    assert not isinstance(raised.value, OSError)
    line = disk_failure(raised.value, [])
    assert line is not None and line.startswith(
        f"no space left on the device writing under {tmp_path}"
    )
    assert "bytes free there" in line


def test_main_says_one_line_with_the_resume_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipelines.noregeo import generate

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(generate, "generate", full)
    out = tmp_path / "items"
    assert main(["generate", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: no space left on the device writing under {tmp_path}; ")
    assert "resume with: " in err


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
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
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
