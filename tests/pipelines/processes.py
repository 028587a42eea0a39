"""Processes and ports for tests that start Ray nodes or runs of their own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import IO

from store.shards import shard_files
from store.storage import Location
from tests.conftest import REPO


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _start_evaluate(args: list[str], err: IO[bytes], sigint: bool = False) -> subprocess.Popen:
    """`python -m pipelines evaluate ARGS` in its own session (so the whole group can be
    signalled), stderr to `err`; with `sigint`, SIGINT restored to its default in the child
    (a background job of a non-interactive shell starts with it ignored)."""
    restore = (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if sigint else None
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines", "evaluate", *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=err,
        start_new_session=True,
        preexec_fn=restore,
    )


def kill_evaluate_after(
    args: list[str], root: Location, shards: int = 2, timeout_s: float = 600
) -> str:
    """Start `python -m pipelines evaluate ARGS` in its own session and SIGKILL the session
    (the driver and the Ray processes it started) once `shards` result shards are under
    `root`, or the run ended, or `timeout_s` passed. Returns which: "killed", or what
    happened instead with the end of the run's stderr, for the caller's assertion message."""
    with tempfile.TemporaryFile() as err:
        proc = _start_evaluate(args, err)
        deadline = time.monotonic() + timeout_s
        outcome = f"no {shards} shards under {root} in {timeout_s:.0f} s"
        try:
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    outcome = f"the run ended with {proc.returncode} before {shards} shards"
                    break
                if root.exists() and len(shard_files(root)) >= shards:
                    outcome = "killed"
                    break
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if outcome == "killed":
            return outcome
        err.seek(0)
        return f"{outcome}; its stderr ends:\n{err.read().decode(errors='replace')[-3000:]}"


def interrupt_evaluate_after(
    args: list[str], root: Location, shards: int = 2, timeout_s: float = 600
) -> tuple[int, str]:
    """Start `python -m pipelines evaluate ARGS` in its own session and, once `shards`
    result shards are under `root`, send SIGINT to the session, as a terminal's Ctrl-C
    does to its foreground process group. Returns the driver's exit code and its stderr.

    SIGINT is restored to its default in the child: a background job of a non-interactive
    shell starts with it ignored, and Python would then never raise KeyboardInterrupt."""
    with tempfile.TemporaryFile() as err:
        proc = _start_evaluate(args, err, sigint=True)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                if root.exists() and len(shard_files(root)) >= shards:
                    os.killpg(proc.pid, signal.SIGINT)
                    break
                time.sleep(0.05)
            code = proc.wait(timeout=timeout_s)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        err.seek(0)
        return code, err.read().decode(errors="replace")
