"""A store that stops answering mid-run ends the run with one line naming the store, its
endpoint and the command that resumes, and no traceback (issue 26, item 9): before, a moto
S3 server killed mid-run gave about 150 stderr lines and two tracebacks."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from store.records import model_dir
from store.shards import shard_files
from store.storage import location
from tests.conftest import REPO
from tests.pipelines.s3_server import _environment, s3_server

SHARDS_S = 600  # bound on Ray's start-up and two shards on a busy 2-core machine
END_S = 600  # bound on the run noticing the store is gone


def test_a_store_that_dies_mid_run_ends_it_with_one_line_naming_it_and_the_resume(
    small_items: Path,
) -> None:
    args = ["evaluate", "--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    args += ["--tasks", "N-ECL-SLT", "--per-task", "10", "--batch-size", "2"]
    args += ["--shard-rows", "2", "--baseline-delay", "1"]
    with s3_server() as s3, _environment(s3.env), tempfile.TemporaryFile() as err:
        out = s3.uri("outage")
        root = model_dir(location(out), "noregeo", "oracle")
        run = subprocess.Popen(
            [sys.executable, "-m", "pipelines", *args, "--out", out],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + SHARDS_S
            while run.poll() is None and time.monotonic() < deadline:
                if root.exists() and len(shard_files(root)) >= 2:
                    break
                time.sleep(0.2)
            if run.poll() is not None:
                err.seek(0)
                tail = err.read().decode(errors="replace")[-3000:]
                raise AssertionError(f"the run ended before the store went down:\n{tail}")
            os.killpg(s3.pid, signal.SIGKILL)  # the server's own session: moto alone
            code = run.wait(timeout=END_S)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert code == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert len(errors) == 1, errors
    line = errors[0]
    assert f"endpoint {s3.endpoint}" in line and f"s3://{s3.bucket}/outage" in line, line
    resume = shlex.split(line.split("resume with: ", 1)[1])
    assert resume == ["python", "-m", "pipelines", *args, "--out", out], resume
