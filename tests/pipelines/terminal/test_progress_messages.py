"""Console lines that say what happens (issue 39): the probe plan counts what the folder
holds, and the GeoBuild loop prints only the rounds that run. Pure: no Ray, no trials."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pipelines.geobuild.rounds import Loop
from pipelines.probes.grid import plan_line


def test_the_probe_plan_counts_the_folder_not_the_cap() -> None:
    """A fresh folder, 10 trials, --max-trials 2: none done (it once read "8 done")."""
    assert plan_line("smoke", 10, 10, 2) == (
        "probe grid smoke: 10 trials, 0 done, 2 to run, 8 left for a later run (--max-trials 2)"
    )
    assert plan_line("smoke", 10, 8, 8) == "probe grid smoke: 10 trials, 2 done, 8 to run"


def test_geobuild_prints_only_the_rounds_that_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Every problem ends in round 1 (solved, or out of rounds): rounds 2..5 print nothing."""
    ran: list[int] = []
    queue = {1: [{"id": "367"}, {"id": "368"}]}

    def run_round(round_number: int, requests: list[dict[str, Any]]) -> int:
        ran.append(round_number)
        return len(requests)

    loop = SimpleNamespace(
        max_rounds=5,
        requests=lambda round_number, by_id: queue.get(round_number, []),
        run_round=run_round,
    )
    Loop.run_rounds(loop, 1, {})  # type: ignore[arg-type]
    assert ran == [1]
    assert capsys.readouterr().out.splitlines() == ["round 1: 2 conversation(s) to run"]
