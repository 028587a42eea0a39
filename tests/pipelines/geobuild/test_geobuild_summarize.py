"""geobuild-summarize: the denominator counts every attempted problem, final-round tables."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import pipelines.cli
from pipelines.geobuild.results_json import write_results_json
from pipelines.geobuild.rows import RoundWriter
from pipelines.geobuild.summarize import summary_tables
from store.records import write_run_record

PROBLEMS = [
    {"id": "1", "category": "Circles", "difficulty": 2},  # solved at round 2
    {"id": "2", "category": "Circles", "difficulty": 3},  # every round errored
    {"id": "3", "category": "Angles", "difficulty": 3},  # no row at all (killed early)
]


def _verdict(missing: list[str], failed: list[str]) -> str:
    conditions = [{"type": t, "condition": t, "reason": "off"} for t in failed]
    return json.dumps({"missing_objects": missing, "failed_conditions": conditions})


def _write(root: Path, round_number: int, rows: list[dict[str, object]]) -> None:
    batch = {k: np.array([r[k] for r in rows], dtype=object) for k in rows[0]}
    batch["sampling_params"] = np.array([{}] * len(rows), dtype=object)
    RoundWriter(str(root / f"round={round_number}"), {"model": "m"})(batch)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "geobuild" / "model=m"
    write_run_record(root, {"problems": PROBLEMS})
    base = {"object_score": 0.5, "condition_score": 0.0, "success": False}
    _write(root, 1, [
        {**base, "problem_id": "1", "round": 1, "request_key": "a", "error_category": "syntax",
         "verdict": _verdict(["point A"], [])},
        {**base, "problem_id": "2", "round": 1, "request_key": "b", "error_category": "syntax",
         "verdict": _verdict(["point B"], [])},
    ])  # fmt: skip
    _write(root, 2, [
        {"problem_id": "1", "round": 2, "request_key": "c", "error_category": None,
         "verdict": _verdict([], []), "object_score": 1.0, "condition_score": 1.0,
         "success": True},
        {**base, "problem_id": "2", "round": 2, "request_key": "d", "error_category": "geometric",
         "verdict": _verdict(["segment AB", "point C"], ["parallel"])},
    ])  # fmt: skip
    return tmp_path


def test_denominator_counts_every_attempted_problem(results: Path) -> None:
    overall = summary_tables(results)["overall"].row(0, named=True)
    assert overall["problems"] == 3 and overall["solved"] == 1
    assert overall["success_rate_all"] == pytest.approx(1 / 3)
    assert overall["mean_rounds_to_success"] == pytest.approx(2.0)
    # Partial: 1.0 (solved), 0.3 x 0.5 (final round of 2), 0 (no row).
    assert overall["mean_partial_score"] == pytest.approx((1.0 + 0.15 + 0.0) / 3)


def test_by_category_and_difficulty(results: Path) -> None:
    tables = summary_tables(results)
    by_category = {r["category"]: r for r in tables["by_category"].iter_rows(named=True)}
    assert by_category["Circles"]["success_rate_all"] == 0.5
    assert by_category["Angles"]["problems"] == 1 and by_category["Angles"]["solved"] == 0
    by_difficulty = {
        r["difficulty"]: r["problems"] for r in tables["by_difficulty"].iter_rows(named=True)
    }
    assert by_difficulty == {2: 1, 3: 2}


def test_final_round_errors_and_failures(results: Path) -> None:
    tables = summary_tables(results)
    errors = dict(tables["error_categories"].select("error_category", "count").iter_rows())
    public = dict(
        tables["error_categories"].select("error_category", "error_category_public").iter_rows()
    )
    assert public == {"none": "none", "not_run": "not_run", "geometric": "other_error"}
    assert errors == {
        "none": 1,
        "not_run": 1,
        "geometric": 1,
    }  # round-1 syntax errors are not final
    missing = dict(tables["missing_objects"].select("object_type", "count").iter_rows())
    assert missing == {"segment": 1, "point": 1}
    failed = dict(tables["failed_conditions"].select("condition_type", "count").iter_rows())
    assert failed == {"parallel": 1}


def test_cli_prints_tables_and_refuses_empty_dirs(
    results: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        pipelines.cli.COMMANDS, "geobuild-summarize", ("pipelines.geobuild.summarize", "s")
    )
    assert pipelines.cli.main(["geobuild-summarize", str(results)]) == 0
    text = capsys.readouterr().out
    assert "success % (all)" in text and "public success % (clean data)" in text
    assert "## error_categories" in text
    assert "## problems" not in text  # the per-problem table only with --all / --tables
    (tmp_path / "none").mkdir()  # a folder without GeoBuild results (a missing one: argparse)
    assert pipelines.cli.main(["geobuild-summarize", str(tmp_path / "none")]) == 2
    assert "no GeoBuild results" in capsys.readouterr().err


def test_json_and_csv_give_the_printed_percentages(
    results: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        pipelines.cli.COMMANDS, "geobuild-summarize", ("pipelines.geobuild.summarize", "s")
    )
    assert (
        pipelines.cli.main(["geobuild-summarize", str(results), "--format", "json", "--all"]) == 0
    )
    tables = json.loads(capsys.readouterr().out)
    assert list(tables) == [
        "overall",
        "by_category",
        "by_difficulty",
        "error_categories",
        "missing_objects",
        "failed_conditions",
        "error_accounting",
        "success_by_round",
        "feedback_fixes",
        "error_transitions",
        "problems",
    ]
    (overall,) = tables["overall"]
    assert overall["success % (all)"] == pytest.approx(round(100 / 3, 1))
    assert {r["problem_id"] for r in tables["problems"]} == {"1", "2", "3"}
    shares = {r["error_category"]: r["problems %"] for r in tables["error_categories"]}
    assert shares == pytest.approx({"none": 33.3, "not_run": 33.3, "geometric": 33.3})
    argv = ["geobuild-summarize", str(results), "--format", "csv", "--tables", "by_category"]
    assert pipelines.cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = list(csv.DictReader(lines))
    shown = {r["category"]: float(r["success % (all)"]) for r in rows}
    assert shown == {"Angles": 0.0, "Circles": 50.0}


def test_results_json_holds_the_success_rates_of_every_attempted_problem(results: Path) -> None:
    root = results / "geobuild" / "model=m"
    write_run_record(root, {"benchmark": "geobuild", "problems": PROBLEMS, "lang": "en"})
    path = write_results_json(results, "m")
    assert path == root / "results.json"
    document = json.loads(path.read_text())
    overall = document["results"]["overall"]
    # Recomputed from the fixture: problem 1 solved at round 2; 2 failed; 3 never ran.
    assert overall["problems"] == len(PROBLEMS) and overall["solved"] == 1
    assert overall["success_pct_all"] == pytest.approx(100 / 3, abs=1e-3)
    assert overall["mean_rounds_to_success"] == 2.0
    assert document["results"]["by_category"]["Circles"]["success_pct_all"] == 50.0
    assert document["results"]["by_difficulty"]["3"]["solved"] == 0
    errors = document["results"]["error_categories"]
    assert {kind: e["count"] for kind, e in errors.items()} == {
        "none": 1,
        "not_run": 1,
        "geometric": 1,
    }
    assert errors["geometric"]["problems_pct"] == pytest.approx(100 / 3, abs=1e-3)
    assert document["config"]["lang"] == "en"
    assert (root / "runs" / document["provenance"]["run_record"]).is_file()
    assert document["provenance"]["packages"]["polars"] is not None
