"""A forwarder that never had an answer from its engine host still names the node the host
was lost on (pipelines/engines/stages/resident_hosts.py).

Ray's GCS clears a restarting actor's address and keeps no death context until the actor is
dead for good (seen in tests/pipelines/test_lost_engine_node.py: "the engine node (its
address unknown)" when the forwarder that saw the loss had no answer yet). The cluster runs
in a process of its own (lost_host_scenario.py), its address recorded under a Ray temp folder
of the test's own (tests/ray_tmpdir.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.ray_tmpdir import own_ray_tmpdir


def test_a_watch_without_an_answer_names_the_lost_node(monkeypatch: pytest.MonkeyPatch) -> None:
    with own_ray_tmpdir(monkeypatch):
        done = subprocess.run(
            [sys.executable, "-m", "tests.pipelines.engines.stages.lost_host_scenario"],
            capture_output=True, text=True, cwd=REPO, timeout=300,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["recorded"] == seen["where"], seen
    assert seen["state"] in ("RESTARTING", "PENDING_CREATION"), seen
    assert seen["line"] is not None, seen
    assert seen["line"].startswith(f"the engine node {seen['where']} of tiny-llm was lost"), seen
