"""Ctrl-C and SIGTERM: one line saying what is saved and how to resume, and exit 130
(128 + SIGINT) or 143 (128 + SIGTERM).

A command that writes results registers, once it knows its results folder, how to count
what that folder holds (`on_interrupt`); `pipelines.cli.entry` prints the line. Counting
reads shard footers only: the run's writers may still be finishing, and nothing here may
move or sweep a file under them.

Issue 38 saw Ctrl-C ignored (the main thread blocked where no Python handler runs, or the
KeyboardInterrupt swallowed inside Ray), a SIGSEGV after the line (interpreter shutdown
with Ray loaded), and SIGTERM ending in Ray's C++ crash dump with exit 134: the core worker
that `ray.init` starts installs its failure-signal handler for SIGTERM over Python's. So
`take_signals` (at start, and again after `ray.init`) puts Python's handlers back: SIGINT
raises KeyboardInterrupt, SIGTERM raises `Terminated`; and a watcher thread, woken by the
signal's byte on Python's wakeup descriptor whatever the main thread is doing, ends the
process itself with the line if the main thread has not within GRACE_S. Either way the
line is printed once and the process leaves by `os._exit`, skipping the shutdown that
crashed; Ray's processes are ended by the reaper (pipelines.engines.session.ray_reaper).

SIGTERM gets no grace. Sent to every process of a job (Slurm's scancel, systemd's control
group), it also ends the raylet, and the driver's core worker then ends the process itself,
exit 1 and nothing said, about 40 ms later, as soon as it learns its node is gone
(pipelines.engines.session.ray_process_groups, which keeps a SIGTERM to the command's process group
away from Ray's processes). So the watcher writes the rows the driver holds and ends the
command at once; waiting for a main thread inside Ray would lose them.

Ray is not shut down first either. `ray.shutdown` with a dataset's executor thread still
inside a Ray call (the unwinding leaves it running) makes Ray's core worker end the process
with exit 1 and one C++ line, "The core worker has already been shutdown"
(core_worker_process.cc, Ray 2.60), which pipelines.terminal.native_stderr keeps off the console:
`geobuild` ended silently with exit 1 on 4 of 14 SIGINTs here. The count needs no stopped
workers: a run's writers rename their shards under its lock (store.run_lock), released
before the line is counted (by the run's unwinding, or by the save it registered with
`kept_on_exit`), and a late writer finds it gone and writes nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

from store.shards import shard_files
from store.storage import Location, parquet_file

# 128 + the signal, as a shell reports a command that the signal ended.
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM
# Seconds the main thread has to end the command after a signal before the watcher does:
# with store.held_rows.KEEP_WAIT_S, within the 5 s issue 39 asks of a Ctrl-C (the main
# thread's own unwinding takes well under a second when it is not stuck inside Ray).
GRACE_S = 3.0
_lock = threading.Lock()
_signalled: list[int] = []


class Terminated(BaseException):
    """SIGTERM, raised in the main thread as KeyboardInterrupt is for SIGINT (a
    BaseException, so no `except Exception` on the way swallows it)."""


def take_signals() -> None:
    """Python's own handlers for SIGINT (unless inherited as ignored: a background job's)
    and SIGTERM, and the watcher; call from the main thread, again after `ray.init`."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _raise)
    signal.signal(signal.SIGTERM, _raise)
    if _watcher_fd[0] is None:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        _watcher_fd[0] = write_end
        threading.Thread(target=_watch, args=(read_end,), name="signals", daemon=True).start()
    else:
        signal.set_wakeup_fd(_watcher_fd[0], warn_on_full_buffer=False)


_watcher_fd: list[int | None] = [None]


def retake_signals() -> None:
    """`take_signals` again after `ray.init` took SIGTERM, in a console command only (a
    test's process keeps its own handlers)."""
    if _watcher_fd[0] is not None:
        take_signals()


def shut_down_ray() -> None:
    """End the Ray this command started or joined, where a signal still ends the command
    with its line (called once the command is done): left to Ray's own exit hook, a Ctrl-C
    during its shutdown printed a KeyboardInterrupt traceback and exited 0 (issue 39). Any
    signal after it ends the process with the line at once: nothing is left to unwind."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is _raise:
                signal.signal(signum, _finish_now)


def _finish_now(signum: int, frame: FrameType | None) -> None:
    finish(128 + signum)


def _raise(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated


def _watch(read_end: int) -> None:
    """Wait for a signal's byte; then, after a SIGINT, give the main thread GRACE_S to end
    the command."""
    while True:
        data = os.read(read_end, 1)
        if data and data[0] in (signal.SIGINT, signal.SIGTERM):
            break
    signum = data[0]
    if signum == signal.SIGINT:  # SIGTERM: no grace (module docstring)
        threading.Event().wait(GRACE_S)
    finish(128 + signum)


def finish(code: int) -> NoReturn:
    """Print the interrupted line once (whichever thread comes first) and leave with `code`."""
    with _lock:
        if not _signalled:
            _signalled.append(code)
            verb = "terminated" if code == EXIT_TERMINATED else "interrupted"
            line = interrupted_line().replace("interrupted", verb, 1)
            try:
                print(line, file=sys.stderr, flush=True)
                sys.stdout.flush()
            except (OSError, ValueError):  # a closed console must not change the exit code
                pass
        os._exit(_signalled[0])


_describe_saved: Callable[[], str] | None = None


def on_interrupt(describe_saved: Callable[[], str]) -> None:
    """Register what the interrupted line says is saved, e.g. "120 rows saved in DIR"."""
    global _describe_saved
    _describe_saved = describe_saved


_keep: list[Callable[[], object]] = []


@contextlib.contextmanager
def kept_on_exit(save: Callable[[], object]) -> Iterator[None]:
    """While the block runs, a signal that ends the command calls `save` before the
    interrupted line counts what is saved, from whichever thread ends it: e.g. write what
    the driver holds (store.held_rows), release the run's lock so that no late writer adds
    a shard after the count (store.run_lock). The innermost block's `save` runs first."""
    _keep.append(save)
    try:
        yield
    finally:
        _keep.remove(save)


def interrupted_line() -> str:
    """The one line a Ctrl-C prints, counting what is on disk once what the driver holds is
    written (kept_on_exit)."""
    for save in reversed(list(_keep)):
        # What could not be written is not counted; the line still comes.
        with contextlib.suppress(Exception):
            save()
    saved = "what finished is saved"
    if _describe_saved is not None:
        try:
            saved = _describe_saved()
        except Exception:  # a count that fails must not turn Ctrl-C into a traceback
            saved = "what finished is saved (it could not be counted)"
    return f"interrupted; {saved}; run the same command to resume"


def saved_rows(root: Location) -> Callable[[], str]:
    """A description counting the rows of the finished shards under a results folder."""

    def describe() -> str:
        rows = 0
        for shard in shard_files(root):
            try:
                rows += parquet_file(shard).metadata.num_rows
            except Exception:  # a shard half-written when the signal came: not saved
                continue
        return f"{rows} rows saved in {root}"

    return describe
