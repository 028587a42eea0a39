"""Ray's C++ log lines stay off the console without --verbose; everything else written to
descriptor 2 (a child's output, a partial line, Python's own writes) still reaches it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from pipelines.terminal.native_stderr import RAY_NATIVE_LINE
from tests.conftest import REPO

# The notice a Ray Data actor pool makes the driver print (copied from a demo's console,
# Ray 2.60), and a FATAL line in the same format.
RAY_NOTICE = (
    "[2026-12-01 19:00:29,516 E 26518 26518] core_worker.cc:2465: Actor with class name: "
    "'MapWorker(MapBatches(TaskShardWriter))' and ID: '0bb5' has constructor arguments in "
    "the object store and max_restarts > 0."
)
RAY_FATAL = "[2026-12-01 19:00:30,000 F 26518 26518] core_worker.cc:1: Check failed: x"

WRITER = textwrap.dedent(
    """
    import os, subprocess, sys
    from pipelines.terminal.native_stderr import hold_ray_native_lines
    if sys.argv[1] == "held":
        hold_ray_native_lines()
    os.write(2, (sys.argv[2] + "\\nplain native line\\n").encode())
    subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('child line\\\\n')"])
    print("python line", file=sys.stderr)
    os.write(2, (sys.argv[3] + "\\n").encode())
    os.write(2, b"partial, no newline")
    """
)


def run_writer(mode: str) -> str:
    """The console's stderr of a process that writes each kind of line."""
    done = subprocess.run(
        [sys.executable, "-c", WRITER, mode, RAY_NOTICE, RAY_FATAL],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_ray_lines_are_held_and_the_rest_reaches_the_console() -> None:
    err = run_writer("held")
    assert "constructor arguments" not in err
    for kept in ("plain native line\n", "child line\n", "python line\n", RAY_FATAL, "partial"):
        assert kept in err, (kept, err)
    assert err.endswith("partial, no newline")


def test_without_the_hold_every_line_shows() -> None:
    """The check above would see the notice if it were not held (what --verbose keeps)."""
    err = run_writer("verbose")
    assert RAY_NOTICE in err and "plain native line" in err


def test_the_pattern_takes_only_ray_lines_below_fatal() -> None:
    assert RAY_NATIVE_LINE.match(RAY_NOTICE.encode())
    assert not RAY_NATIVE_LINE.match(RAY_FATAL.encode())
    assert not RAY_NATIVE_LINE.match(b"[notice] A new release of pip is available")
    assert not RAY_NATIVE_LINE.match(b"error: --tasks: no task 'C-BCT-CX'")


def test_a_closed_console_does_not_block_the_writers() -> None:
    """With the console gone (the reader of stderr closed), native writes beyond a pipe's
    capacity still finish: the forwarder keeps draining."""
    writer = textwrap.dedent(
        """
        import os
        from pipelines.terminal.native_stderr import hold_ray_native_lines
        hold_ray_native_lines()
        for _ in range(2000):
            os.write(2, b"x" * 200 + b"\\n")  # 400 kB: six times a pipe's 64 kB
        print("done")
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", writer],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None and child.stdout is not None
    child.stderr.close()  # the console goes away before the writes
    try:
        code = child.wait(timeout=60)  # blocked for good if the forwarder stopped draining
    finally:
        child.kill()
    assert code == 0 and child.stdout.read() == "done\n"
