"""Local Ray started again when its raylet misses Ray's own 30 s registration wait, the
failed start's processes ended first (a CI run at load 15-30 failed a Ctrl-C test on
"The current node timed out during startup", from ray/_private/node.py at Ray 2.60)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipelines.engines.session.ray_session import start_local
from tests.conftest import REPO


def test_a_start_past_rays_wait_is_tried_again_and_leaves_one_cluster() -> None:
    """Ray's real start fails (see tests/pipelines/slow_raylet.py), the second one runs a
    task; the first start's GCS and raylet are gone and one raylet runs."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.pipelines.slow_raylet"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["inits"] == 2 and seen["answer"] == 42
    started = " ".join(seen["first_start"])
    assert "gcs_server" in started and "raylet" in started, seen
    assert seen["first_start_alive"] == [], seen
    assert seen["raylets_now"] == 1, seen
    assert "trying again" in result.stderr


def test_any_other_failure_is_raised_at_once() -> None:
    calls = []

    def init(**_: object) -> None:
        calls.append(1)
        raise ConnectionError("GCS address unreachable")

    with pytest.raises(ConnectionError):
        start_local(init)
    assert calls == [1]


def test_the_last_timeout_is_raised() -> None:
    calls = []

    def init(**_: object) -> None:
        calls.append(1)
        raise Exception("The current node timed out during startup.")

    with pytest.raises(Exception, match="timed out during startup"):
        start_local(init)
    assert len(calls) == 3
