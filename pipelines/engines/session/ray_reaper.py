"""Ends the local Ray processes a driver started once the driver is gone, however it ended.

Measured with Ray 2.60 on Linux: after SIGKILL of a driver that started local Ray, the GCS,
raylet, monitor and workers die at once (Ray starts them with PR_SET_PDEATHSIG), but the
dashboard agent and the runtime-env agent, children of the raylet, stay: they log "Raylet
is dead! Exiting" and call sys.exit inside an asyncio task, which ends the task, not the
process (both were still alive 60 s later; issue 26, item 9).

So `start_reaper` (called by `ray_session.ensure_ray` when it starts local Ray) starts this
module as a small process of its own session, holding the read end of a pipe whose write
end only the driver holds. Every POLL_S it records the driver's descendants (pid and start
time, from /proc); when the pipe reports end of file (the driver exited, was killed or
crashed), it sends SIGTERM to each recorded process still running with the same start
time (so a reused pid is left alone), waits up to GRACE_S, sends SIGKILL to what remains,
and exits. A process started less than POLL_S before the driver died may be missed: Ray's
own fate-sharing ends those (the ones the agents were measured to escape are started with
the raylet, seconds before any work).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.5  # how often the driver's descendants are recorded
GRACE_S = 5.0  # SIGTERM to SIGKILL
PROC = Path("/proc")


def start_reaper() -> int | None:
    """Start the reaper for this process; the write end of its pipe stays open (and
    non-inheritable, so no Ray process holds it) until this process ends. Its pid, or None
    where there is no /proc to read descendants from."""
    if not PROC.is_dir():
        return None
    read_end, write_end = os.pipe()  # both non-inheritable (PEP 446)
    reaper = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipelines.engines.session.ray_reaper",
            str(os.getpid()),
            str(read_end),
        ],
        pass_fds=(read_end,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # not the driver's: a `| tee` ends with the driver
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C or killpg of the driver's group leaves it be
    )
    os.close(read_end)
    _KEEP_OPEN.append(write_end)
    return reaper.pid


_KEEP_OPEN: list[int] = []  # the pipe's write end, closed by the kernel when we end


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def descendants(root: int) -> list[int]:
    """Pids under `root`, from each process's parent in /proc/PID/stat."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone since the listing
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(seen: dict[int, int]) -> list[int]:
    return [pid for pid, started in seen.items() if start_time(pid) == started]


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):  # ended meanwhile
            os.kill(pid, sig)


def end_all(seen: dict[int, int], grace_s: float = GRACE_S) -> None:
    """SIGTERM each recorded process still running as recorded, SIGKILL what is left after
    `grace_s` (polled, so it returns as soon as they are gone)."""
    _signal(_alive(seen), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _alive(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal(_alive(seen), signal.SIGKILL)


def main(argv: list[str]) -> int:
    """`python -m pipelines.engines.session.ray_reaper DRIVER_PID PIPE_FD` (see the module doc)."""
    driver, pipe = int(argv[0]), int(argv[1])
    for sig in (signal.SIGINT, signal.SIGHUP):  # the terminal's, meant for the driver
        signal.signal(sig, signal.SIG_IGN)
    me, seen = os.getpid(), {}
    while True:
        for pid in descendants(driver):
            if pid != me and pid not in seen:
                started = start_time(pid)
                if started is not None:
                    seen[pid] = started
        ready, _, _ = select.select([pipe], [], [], POLL_S)
        if ready and not os.read(pipe, 1):
            break  # end of file: the driver's write end is closed, so the driver is gone
    end_all(seen)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
