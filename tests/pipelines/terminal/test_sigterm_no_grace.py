"""SIGTERM is obeyed at once, without waiting for the main thread: sent to every process
of a job (Slurm, systemd), it ends Ray's raylet too, and the driver's core worker then
ends the process with exit 1 and nothing said about 40 ms later, the answered rows the
driver held lost (pipelines.terminal.interrupt; measured with a group SIGTERM before
pipelines.engines.session.ray_process_groups: 1 in 12 at load 3). Here the main thread never ends
the command, as when it waits inside Ray, and the grace it would get is an hour: the command
still ends with its line, after the saves the run registered, innermost first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.conftest import REPO

SCRIPT = """
import signal, sys, threading
from pipelines.terminal import interrupt
interrupt.GRACE_S = 3600.0
interrupt.take_signals()
interrupt.on_interrupt(lambda: "7 rows saved in results")
say = lambda what: print(what, file=sys.stderr, flush=True)
# The main thread, as inside Ray's wait, does not end the command: its Python handler does
# nothing. (Blocking the signal in the main thread is not enough: CPython runs handlers in
# the main thread whichever thread the kernel picks, and one that came while it still ran
# bytecode raised Terminated there; at load, once in a CI run.) The wakeup byte that wakes
# the watcher is written for any Python handler.
signal.signal(signal.SIGTERM, lambda signum, frame: None)
with interrupt.kept_on_exit(lambda: say("lock released")):
    with interrupt.kept_on_exit(lambda: say("held rows written")):
        print("ready", flush=True)
        threading.Event().wait()
"""


def test_sigterm_ends_the_command_without_the_main_thread() -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None and run.stdout.readline() == "ready\n"
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=120)  # the old code waited GRACE_S, here an hour
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines() == [
        "held rows written",
        "lock released",
        "terminated; 7 rows saved in results; run the same command to resume",
    ]
