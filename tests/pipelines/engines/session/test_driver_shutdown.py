"""A killed driver leaves no process of its Ray session behind (issue 26, item 9): before
pipelines.engines.session.ray_reaper, the dashboard agent and the runtime-env agent outlived every
SIGKILL of a `geosee evaluate` driver (measured: still alive 60 s later)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.engines.session.ray_reaper import descendants, start_time
from tests.conftest import REPO

AGENTS = {"ray::DashboardAgent", "ray::RuntimeEnvAgent"}
START_S = 600  # bound on Ray's start-up on a busy 2-core machine (60-90 s idle)
END_S = 60  # bound on the reaper's clean-up: POLL_S + GRACE_S, with room for load


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def _session(driver: int) -> dict[int, int]:
    """The driver's descendants (pid: start time), Ray's and the reaper."""
    found = {pid: start_time(pid) for pid in descendants(driver)}
    return {pid: started for pid, started in found.items() if started is not None}


def _alive(processes: dict[int, int]) -> dict[int, str]:
    return {pid: _name(pid) for pid, t in processes.items() if start_time(pid) == t}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_evaluate_driver_leaves_no_ray_process(
    small_items: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    args = ["--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    args += ["--tasks", "C-BCT-CT", "--per-task", "4", "--baseline-delay", "30"]
    driver = subprocess.Popen(
        [sys.executable, "-m", "pipelines", "evaluate", *args, "--out", str(tmp_path / "r")],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    session: dict[int, int] = {}
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and driver.poll() is None:
            session |= _session(driver.pid)
            if set(_alive(session).values()) >= AGENTS:
                break
            time.sleep(0.2)
        assert set(_alive(session).values()) >= AGENTS, f"Ray did not start: {_alive(session)}"
        session |= _session(driver.pid)
        os.kill(driver.pid, sig)  # the driver alone, as a user's kill or the OOM killer does
        driver.wait()
        deadline = time.monotonic() + END_S
        while _alive(session) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(session) == {}, f"left behind by {sig.name}: {_alive(session)}"
    finally:
        for pid in _alive(session):  # ours to end, by pid: a failed run must not leak them
            os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()
            driver.wait()
