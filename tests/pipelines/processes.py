"""Processes and ports for tests that start Ray nodes or runs of their own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

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


def descendants(root: int) -> list[int]:
    """Pids under `root` (from /proc): the GCS, raylet and workers this test process started."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone since the listing
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4, after the parenthesised name
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_evaluate_after(
    args: list[str], root: Location, shards: int = 2, timeout_s: float = 240
) -> None:
    """Start `python -m pipelines evaluate ARGS` in its own session and SIGKILL the session
    (the driver and the Ray processes it started) once `shards` result shards are under
    `root`, or the run ended, or `timeout_s` passed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines", "evaluate", *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if root.exists() and len(shard_files(root)) >= shards:
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
