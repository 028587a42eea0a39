"""geobuild-summarize's error accounting: our final-round counts beside the public per-step
sums (run_agent_benchmark.py's DetailedMetrics), recomputed here from hand-built rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pipelines.geobuild.error_accounting import recovery_steps
from pipelines.geobuild.results_json import write_results_json
from pipelines.geobuild.rows import RoundWriter
from pipelines.geobuild.summarize import summary_tables
from store.records import write_run_record


def _verdict(ours: tuple[int, int], public: tuple[int, int] | None) -> str:
    """A verdict JSON with `ours` (missing, failed) and, unless None, the public ones."""
    data: dict[str, object] = {
        "missing_objects": [f"point X{i}" for i in range(ours[0])],
        "failed_conditions": [{"type": "parallel"} for _ in range(ours[1])],
    }
    if public is not None:
        data["missing_objects_public"] = public[0]
        data["failed_conditions_public"] = ["angle_value"] * public[1]
    return json.dumps(data)


def _row(pid: str, k: int, category: str | None, ours=(0, 0), public=(0, 0)) -> dict:
    return {
        "problem_id": pid,
        "round": k,
        "error_category": category,
        "object_score": 1.0,
        "condition_score": 1.0,
        "success": False,
        "data_errors": "",
        "verdict": _verdict(ours, public),
    }


# p1: two errors, then runs (one recovery of 2 steps); p2: errors, an engine error (no public
# step), an error at the end (no recovery); p3: an older row without the public lists (ours
# counted), an error, a run (a recovery of 1 step); p4: attempted, never ran.
ROWS = [
    _row("p1", 1, "syntax", ours=(2, 1)),
    _row("p1", 2, "syntax"),
    _row("p1", 3, None, ours=(1, 1), public=(2, 3)),
    _row("p1", 4, None, ours=(0, 0), public=(0, 1)),
    _row("p2", 1, "no_program"),
    _row("p2", 2, "undefined_label"),
    _row("p2", 3, "engine_error"),
    _row("p2", 4, "geometric", ours=(1, 1), public=(5, 5)),
    _row("p3", 1, None, ours=(1, 0), public=None),
    _row("p3", 2, "syntax"),
    _row("p3", 3, None, ours=(0, 0), public=(0, 0)),
]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "geobuild" / "model=m"
    problems = [{"id": i, "category": "c", "difficulty": 1} for i in ("p1", "p2", "p3", "p4")]
    write_run_record(root, {"benchmark": "geobuild", "problems": problems, "max_rounds": 4})
    for k in range(1, 5):
        part = [{**r, "request_key": f"{r['problem_id']}{k}"} for r in ROWS if r["round"] == k]
        batch = {c: np.array([r[c] for r in part], dtype=object) for c in part[0]}
        batch["sampling_params"] = np.array([{}] * len(part), dtype=object)
        RoundWriter(str(root / f"round={k}"), {"model": "m"})(batch)
    return tmp_path


def test_public_step_sums_beside_our_final_round(results: Path) -> None:
    (row,) = summary_tables(results)["error_accounting"].to_dicts()
    assert row["model"] == "m" and row["problems"] == 4
    # Final rounds: p1 r4 ran (0, 0), p2 r4 geometric (1, 1), p3 r3 ran (0, 0), p4 none.
    assert row["dsl_errors_final_ours"] == 1
    assert row["missing_objects_final_ours"] == 1
    assert row["failed_conditions_final_ours"] == 1
    # Steps: p1 2 errors, p2 3 (the engine error is no step), p3 1; over the 3 problems
    # with a step.
    assert row["dsl_errors_steps_public"] == 6
    assert row["hallucinations_per_problem_public"] == pytest.approx(6 / 3)
    # Recoveries: p1 rounds 1 -> 3 (2), p3 rounds 2 -> 3 (1); p2 never recovers.
    assert row["mean_recovery_steps_public"] == pytest.approx(1.5)
    # Executed steps: p1 r3 (2, 3) and r4 (0, 1) public; p3 r1 ours (1, 0); p3 r3 (0, 0).
    assert row["missing_objects_steps_public"] == 3
    assert row["failed_conditions_steps_public"] == 4


def test_results_json_holds_both_accountings(results: Path) -> None:
    document = json.loads(write_results_json(results, "m").read_text())
    accounting = document["results"]["error_accounting"]
    assert accounting["dsl_errors_final_ours"] == 1 and accounting["dsl_errors_steps_public"] == 6


def test_problems_table_shows_the_public_scores_when_rows_have_them(results: Path) -> None:
    # These hand-built rows predate the public scores: the columns are there, empty.
    problems = summary_tables(results)["problems"]
    assert problems["object_score_public"].null_count() == problems.height == 4
    assert problems["condition_score_public"].null_count() == 4


def test_recovery_needs_a_step_that_runs_again() -> None:
    assert recovery_steps([(1, True), (2, True), (3, False), (4, True), (5, False)]) == [2, 1]
    assert recovery_steps([(1, False), (2, True), (3, True)]) == []
    assert recovery_steps([]) == []
