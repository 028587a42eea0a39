"""Issue 38: SIGINT and SIGTERM end a running command with one line, exit 130 or 143, within
10 s, without Ray's C++ crash dump; the same command then resumes to every row once.

As the issue's probe did: the command runs as `python -m pipelines` from a parent that
restores SIGINT's default (a background job of a non-interactive shell starts with SIGINT
ignored, which Python, and so the command, keeps). The suite sends a handful of signals;
`make stress` sends 20 SIGINTs and 10 SIGTERMs at random moments.
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.conftest import REPO

# Seconds a signalled command may take to end (the bound).
BOUND_S = 10.0
TASKS = ("--tasks", "C-BCT-CT,N-ECL-SLT", "--setups", "text", "--shard-rows", "4")
ROWS = 40  # 20 items per task in small_items, two tasks, one setup


def _command(items: Path, out: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "pipelines", "evaluate", "--items", str(items)),
        *("--engine", "random", "--model", "random", *TASKS, "--out", str(out)),
        *("--baseline-delay", "0.05"),  # a few seconds of run to land a signal in
    ]


def _signalled(
    argv: list[str], sig: int, delay_s: float, started: str | None = "evaluate random:"
) -> tuple[Any, str, float]:
    """Run `argv`, send `sig` `delay_s` after its first line starting with `started` (Ray is
    up, rows are being written; None: after the process starts), and return its exit code
    (None: still running BOUND_S later, then killed), stderr and the seconds from the signal
    to the exit (0 when it ended before the signal; printed by the stress runs, never
    asserted: issue 39's 5 s is a measurement on the local cluster, not a test bound)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    running = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if started is not None and line.startswith(started):
                running.set()

    if started is None:
        running.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    running.wait(300)
    time.sleep(delay_s)
    code: int | None = None
    seconds = 0.0
    if process.poll() is None:
        sent = time.monotonic()
        process.send_signal(sig)
        try:
            code = process.wait(BOUND_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        seconds = time.monotonic() - sent
    else:
        code = process.returncode
    reader.join(5)
    return code, "".join(lines), seconds


def _check(code: int | None, err: str, sig: int, progress: tuple[str, ...] = ()) -> bool:
    """Whether a signalled run ended as it must; False when it finished before the signal.
    `progress`: the prefixes of the command's own progress lines, besides evaluate's."""
    if code == 0:
        return False  # the run was done before the signal came: nothing to check
    verb, expected = ("interrupted", 130) if sig == signal.SIGINT else ("terminated", 143)
    own = ("evaluate ", *progress)
    said = [line for line in err.splitlines() if not line.startswith(own)]
    assert code == expected, (code, err)
    # "interrupted; N rows saved ..." or, before the command started, "interrupted before".
    assert len(said) == 1 and said[0].startswith((f"{verb}; ", f"{verb} before ")), err
    assert "***" not in err and "Traceback" not in err
    return True


def _every_row_once(argv: list[str], out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = pl.read_parquet(out / "noregeo" / "**" / "*.parquet")
    assert rows.height == ROWS and rows["request_key"].n_unique() == ROWS


@pytest.mark.slow
def test_sigterm_and_sigint_mid_run_end_it_in_one_line_and_the_rerun_completes(
    small_items: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    argv = _command(small_items, out)
    for sig in (signal.SIGTERM, signal.SIGINT):
        code, err, _ = _signalled(argv, sig, 0.5)
        assert _check(code, err, sig), err  # 40 rows at 0.05 s each outlast 0.5 s
    _every_row_once(argv, out)


def test_ctrl_c_while_ray_shuts_down_after_the_work_is_one_line_and_130(
    small_items: Path, tmp_path: Path
) -> None:
    """Issue 39: Ctrl-C during Ray's shutdown after a finished run printed a KeyboardInterrupt
    traceback (Ray's exit hook) and exited 0. The shutdown is made 3 s slower to land in."""
    marker = tmp_path / "shutting-down"
    argv = _command(small_items, tmp_path / "results")
    argv[1:3] = ["-m", "tests.pipelines.shutdown_signal_scenario", str(marker)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "Ray's shutdown never started"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=BOUND_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith(f"interrupted; {ROWS} rows saved in "), err


@pytest.mark.stress
@pytest.mark.timeout(3600)  # 30 runs and 30 resumes: about 15-30 min on two busy cores
def test_twenty_sigints_and_ten_sigterms_at_random_moments(
    small_items: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    argv = _command(small_items, out)
    draw = random.Random(38)
    signals = [signal.SIGINT] * 20 + [signal.SIGTERM] * 10
    draw.shuffle(signals)
    obeyed = 0
    exits: list[float] = []
    for sig in signals:
        code, err, seconds = _signalled(argv, sig, draw.uniform(0.0, 3.0))
        landed = _check(code, err, sig)
        obeyed += landed
        exits += [seconds] if landed else []
        verdict = f"obeyed, exit {seconds:.1f} s after it" if landed else "too late"
        print(f"signal {signal.Signals(sig).name}: exit {code}, {verdict}")
        _every_row_once(argv, out)
        for shard in (out / "noregeo").rglob("*.parquet"):  # start over for the next signal
            shard.unlink()
    print(f"{obeyed} of {len(signals)} signals landed in a running command and were obeyed")
    if exits:
        print(f"signal to exit: median {statistics.median(exits):.1f} s, max {max(exits):.1f} s")


def _hf_command(items: Path, out: Path, model: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "pipelines", "evaluate", "--items", str(items)),
        *("--engine", "hf", "--model", str(model), *TASKS, "--out", str(out)),
        *("--max-tokens", "8", "--batch-size", "2"),
    ]


def _geobuild_command(script: Path, out: Path) -> list[str]:
    from tests.conftest import SHARED

    return [
        *(sys.executable, "-m", "pipelines", "geobuild"),
        *("--dataset", str(SHARED / "geobuildbench")),
        *("--engine", "programs", "--model", str(script), "--ids", "367,370,380"),
        *("--max-rounds", "3", "--shard-rows", "1", "--out", str(out)),
    ]


@pytest.mark.stress
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("command", ["hf", "geobuild", "report"])
def test_signals_at_random_moments_in_the_other_commands(
    small_items: Path, tiny_llm_dir: Path, tmp_path: Path, command: str
) -> None:
    """Issue 38 asks for hf, geobuild and report too: per command 4 SIGINTs and 2 SIGTERMs at
    random moments (0-3 s after its first progress line; the report's from its start), each
    followed by the same command, which must end with every row once (a whole report)."""
    import json

    out = tmp_path / "results"
    progress: tuple[str, ...] = ()
    started: str | None = "evaluate "
    if command == "hf":
        argv = _hf_command(small_items, out, tiny_llm_dir)
    elif command == "geobuild":
        script = tmp_path / "scripted.jsonl"
        replies = [{"id": i, "round": r, "text": "point : 0 0 -> O"} for i in
                   ("367", "370", "380") for r in (1, 2, 3)]  # fmt: skip
        script.write_text("\n".join(json.dumps(r) for r in replies) + "\n")
        argv = _geobuild_command(script, out)
        started, progress = "round ", ("round ", "GeoBuild", "wrote ")
    else:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        first = subprocess.run(_command(small_items, out), env=env, capture_output=True)
        assert first.returncode == 0, first.stderr
        argv = [sys.executable, "-m", "pipelines", "report", str(out), "--out", str(tmp_path / "r")]
        started = None
    draw = random.Random(f"38-{command}")
    signals = [signal.SIGINT] * 4 + [signal.SIGTERM] * 2
    draw.shuffle(signals)
    for sig in signals:
        code, err, seconds = _signalled(argv, sig, draw.uniform(0.0, 3.0), started)
        landed = _check(code, err, sig, progress)
        verdict = f"obeyed, exit {seconds:.1f} s after it" if landed else "late"
        print(f"{command} {signal.Signals(sig).name}: exit {code}, {verdict}")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        assert done.returncode == 0, done.stderr
        if command == "report":
            assert (tmp_path / "r" / "index.html").read_text().rstrip().endswith("</html>")
            continue
        folder = "geobuild" if command == "geobuild" else "noregeo"
        rows = pl.read_parquet(out / folder / "**" / "*.parquet")
        assert rows["request_key"].n_unique() == rows.height
        if command == "hf":
            assert rows.height == ROWS
        else:
            assert rows.height == 9  # 3 problems x 3 rounds, never right
        for shard in (out / folder).rglob("*.parquet"):  # start over for the next signal
            shard.unlink()
