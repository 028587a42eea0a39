"""Ray's C++ log lines kept off the console unless `--verbose` (issue 29).

Ray's core worker in the driver writes its ERROR lines to the process's file descriptor 2
as well as to its own log file (`python-core-driver-*.log` under the session's logs folder;
checked with Ray 2.60). One of them comes with every Ray Data actor pool: "Actor with class
name ... has constructor arguments in the object store and max_restarts > 0"
(ray-project/ray#53727): Ray Data hands each pool actor its transform as an object
reference and keeps restarts on, which our fault tolerance needs. No Ray setting silences
the stderr copy alone (RAY_BACKEND_LOG_LEVEL would also empty Ray's log files), so the
console command routes descriptor 2 through a pipe and forwards every line but Ray's
bracketed C++ lines below FATAL, which stay in Ray's file. Python's own writes
(`sys.stderr`: our messages, tracebacks) bypass the pipe and go straight to the console.
"""

from __future__ import annotations

import atexit
import io
import os
import re
import select
import sys
import threading

# Ray's C++ log prefix: "[2026-12-01 19:00:29,516 E 26518 26518] core_worker.cc:2465: ...".
# FATAL ("F") lines stay on the console: the process is about to die and says why.
RAY_NATIVE_LINE = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [DIWE] \d+ \d+\] \S+:\d+: ")
# How often the forwarder checks whether the command is exiting; and the most it waits for
# the pipe to empty then (a child that inherited descriptor 2 may keep it open).
POLL_S = 0.1
DRAIN_S = 1.0


def hold_ray_native_lines() -> None:
    """From now on this process's descriptor 2 shows everything but Ray's C++ log lines;
    call once, from the console entry point (not under pytest, whose capture owns fd 2)."""
    sys.stderr.flush()
    console = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    # Python's writers keep the console itself, in the stream's own text settings.
    previous = sys.stderr
    sys.stderr = io.TextIOWrapper(
        io.FileIO(console, "w", closefd=False),
        encoding=previous.encoding,
        errors=previous.errors,
        line_buffering=True,
    )
    stop = threading.Event()
    forwarder = threading.Thread(
        target=_forward, args=(read_end, console, stop), name="native-stderr", daemon=True
    )
    forwarder.start()

    def release() -> None:
        # Later native writes (interpreter shutdown) go straight to the console; what is
        # already in the pipe is forwarded before the process ends.
        sys.stderr.flush()
        os.dup2(console, 2)
        stop.set()
        forwarder.join(DRAIN_S + POLL_S)

    atexit.register(release)


def _forward(read_end: int, console: int, stop: threading.Event) -> None:
    """Copy whole lines from the pipe to the console, dropping Ray's C++ lines, until the
    pipe closes or `stop` is set and the pipe has stayed empty."""
    pending = b""
    console_open = [True]

    def show(data: bytes) -> None:
        # A console that went away (a closed pipe) must not stop the draining: writers to
        # descriptor 2 would block once the pipe is full.
        if console_open[0]:
            try:
                os.write(console, data)
            except OSError:
                console_open[0] = False

    while True:
        ready, _, _ = select.select([read_end], [], [], 0 if stop.is_set() else POLL_S)
        if not ready:
            if stop.is_set():
                break
            if pending and not pending.startswith(b"["):
                # A partial line that cannot be Ray's (a prompt, a bar): show it now.
                show(pending)
                pending = b""
            continue
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        kept = [line for line in lines if not RAY_NATIVE_LINE.match(line)]
        if kept:
            show(b"".join(line + b"\n" for line in kept))
    if pending:
        show(pending)
    os.close(read_end)
