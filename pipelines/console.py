"""The `geosee` console script and `python -m pipelines`: a Ctrl-C or SIGTERM obeyed from
the first moment.

pipelines.cli installs its signal handling (pipelines.terminal.interrupt) once its own imports are
done, which takes a second or more; a signal in that window printed Python's
KeyboardInterrupt traceback through the import machinery (issue 38). Nothing has started
then (no Ray, no file), so this module, which imports nothing of the project, answers such
a signal with one line and the signal's exit code until pipelines.cli takes over.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def _before_start(signum: int, frame: FrameType | None) -> None:
    verb = "interrupted" if signum == signal.SIGINT else "terminated"
    try:
        print(f"{verb} before the command started; nothing was written", file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed console must not change the exit code
        pass
    os._exit(128 + signum)


def entry() -> None:
    """Answer signals at once, then run the command (pipelines.cli.entry)."""
    # A SIGINT inherited as ignored (a background job's) stays ignored, as cli keeps it.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _before_start)
    signal.signal(signal.SIGTERM, _before_start)
    from pipelines.cli import entry as run_command

    run_command()
