"""A signal before pipelines.cli has taken over (issue 38: during the command's imports it
printed Python's KeyboardInterrupt traceback): one line, the signal's exit code."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import REPO

# The console entry with pipelines.cli's entry replaced by a signal to itself: the signal
# arrives exactly where cli's imports run, before its handlers exist.
SCRIPT = """
import os, signal, sys, time
import pipelines.cli
pipelines.cli.entry = lambda: (os.kill(os.getpid(), signal.{sig}), time.sleep(30))
from pipelines.console import entry
entry()
"""


def _run(script: str, sigint: signal.Handlers) -> subprocess.CompletedProcess[str]:
    """`python -c SCRIPT` from the checkout, started with SIGINT's disposition `sigint`."""
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )


@pytest.mark.parametrize(("sig", "verb"), [("SIGINT", "interrupted"), ("SIGTERM", "terminated")])
def test_a_signal_before_the_command_starts_is_one_line(sig: str, verb: str) -> None:
    # A background job of a non-interactive shell starts with SIGINT ignored: restored here.
    result = _run(SCRIPT.format(sig=sig), signal.SIG_DFL)
    assert result.returncode == 128 + getattr(signal, sig), result.stderr
    assert result.stderr == f"{verb} before the command started; nothing was written\n"


def test_an_ignored_sigint_stays_ignored() -> None:
    """A background job's SIGINT is ignored by its shell's choice; the console keeps that."""
    script = SCRIPT.format(sig="SIGINT").replace("time.sleep(30)", "print('ran on')")
    result = _run(script, signal.SIG_IGN)
    assert result.returncode == 0 and result.stdout == "ran on\n", result.stderr
