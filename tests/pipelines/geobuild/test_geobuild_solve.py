"""`geobuild-solve`: writes OUT/audit/programs.jsonl and audit.csv that geobuild-check accepts,
persists each result as it finishes and resumes a killed run."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pipelines.cli as cli
from geometry.dsl.dataset import load_problems
from pipelines.geobuild.check import check_lines
from store.journal import Journal, read_journal
from tests.conftest import REPO

PROBLEMS = [
    {
        "id": "iso",
        "required_objects": {"points": ["A", "B", "C"], "polygons": [["A", "B", "C"]]},
        "verification_conditions": [
            {"type": "segment_equality", "segments": [["A", "B"], ["A", "C"]]},
            {"type": "angle_value", "points": [["B", "A", "C"]], "value": 40},
        ],
    },
    {
        "id": "clash",
        "required_objects": {"points": ["A", "B", "C"]},
        "verification_conditions": [
            {"type": "angle_value", "points": [["A", "B", "C"]], "value": 30},
            {"type": "angle_value", "points": [["A", "B", "C"]], "value": 60},
        ],
    },
    {
        "id": "bad",
        "required_objects": {},
        "verification_conditions": [{"type": "no_such_condition"}],
    },
    {
        "id": "circle",
        "required_objects": {"circles": [{"center": "O", "radius_point": "A"}]},
        "verification_conditions": [
            {"type": "diameter", "segment": ["A", "B"], "center": "O"},
            {"type": "point_on_circle", "point": "C", "center": "O"},
            {"type": "angle_value", "points": [["C", "A", "B"]], "value": 25},
        ],
    },
]


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "geobuild-solve", ("pipelines.geobuild.solve", "solve"))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"problems": PROBLEMS}), encoding="utf-8")
    return path


def solve(dataset: Path, out: Path, *extra: str) -> int:
    args = ["geobuild-solve", "--dataset", str(dataset), "--out", str(out), *extra]
    return cli.main(args + ["--restarts", "3", "--conflict-steps", "20000"])


@pytest.mark.parametrize("workers", ["1", "2"])
def test_writes_programs_and_audit(dataset: Path, tmp_path: Path, workers: str) -> None:
    out = tmp_path / "out"
    assert solve(dataset, out, "--workers", workers) == 0
    with (out / "audit" / "audit.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ["iso", "clash", "bad", "circle"]
    status = {r["id"]: r["status"] for r in rows}
    assert status == {
        "iso": "solved",
        "clash": "no_construction",
        "bad": "data_error",
        "circle": "solved",
    }
    clash = next(r for r in rows if r["id"] == "clash")
    assert "value=30" in clash["conflicts"] and "value=60" in clash["conflicts"]
    assert "no_such_condition" in next(r for r in rows if r["id"] == "bad")["reason"]
    # Judged again from each program by the public verdict: "iso" passes; "circle" is solved
    # by our rule but names its circles by "center", a key the public validator does not read
    # (it reads circle_center), so two of its three conditions fail there; the rest have no
    # program. broken_data follows the loader's notes (only "bad" has any).
    problems = {p.id: p for p in load_problems(dataset)}
    assert {r["id"]: r["success_public"] for r in rows} == {
        "iso": "true",
        "clash": "false",
        "bad": "false",
        "circle": "false",
    }
    assert {r["id"]: r["broken_data"] for r in rows} == {
        i: "true" if problems[i].data_errors else "false" for i in status
    }
    assert problems["bad"].data_errors and not problems["iso"].data_errors
    lines = (out / "audit" / "programs.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["iso", "circle"]
    verdicts = list(check_lines(lines, problems))
    assert all(v["success"] for v in verdicts), verdicts


def test_ids_select_problems(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert solve(dataset, out, "--ids", "circle,iso", "--workers", "1") == 0
    assert [r["id"] for r in audit_rows(out)] == ["iso", "circle"]  # data-set order


def test_unknown_ids_are_named(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert solve(dataset, out, "--ids", "iso,nope,gone") == 2
    err = capsys.readouterr().err
    assert "nope" in err and "gone" in err and "iso" not in err.split(":")[-1]
    assert not out.exists()


def test_repeated_ids_are_refused_like_repeated_tasks(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 38: `--ids 367,367` ran 367 once, silently; --tasks refuses its repeats.
    out = tmp_path / "out"
    assert solve(dataset, out, "--ids", "iso,circle,iso") == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --ids names iso more than once" and not out.exists()


def audit_rows(out: Path) -> list[dict[str, str]]:
    with (out / "audit" / "audit.csv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def without_seconds(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Audit rows less the wall-clock column, the one that differs between two runs."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def counts_line(text: str) -> str:
    return next(line for line in text.splitlines() if "audited now" in line)


def test_killed_run_resumes_to_the_same_audit(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = tmp_path / "whole"
    assert solve(dataset, whole, "--workers", "1") == 0
    capsys.readouterr()

    killed = tmp_path / "killed"
    journal = killed / "audit" / "results.jsonl"
    command = [sys.executable, "-m", "pipelines", "geobuild-solve", "--dataset", str(dataset)]
    command += ["--out", str(killed), "--workers", "1", "--restarts", "3"]
    command += ["--conflict-steps", "20000"]
    env = os.environ | {"PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Kill as soon as the first result is persisted (a condition, not a delay); the
        # deadline only keeps a broken command from hanging the test.
        deadline = time.monotonic() + 300
        while not (journal.is_file() and journal.read_bytes().count(b"\n") >= 1):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no result persisted"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
        if proc.stderr:
            proc.stderr.close()
    persisted, _ = read_journal(journal, "id")
    assert len(persisted) >= 1

    assert solve(dataset, killed, "--workers", "2") == 0
    line = counts_line(capsys.readouterr().out)
    assert f"({len(PROBLEMS) - len(persisted)} audited now, {len(persisted)} resumed)" in line
    assert without_seconds(audit_rows(killed)) == without_seconds(audit_rows(whole))
    assert (killed / "audit" / "programs.jsonl").read_bytes() == (
        whole / "audit" / "programs.jsonl"
    ).read_bytes()

    audit = (killed / "audit" / "audit.csv").read_bytes()
    assert solve(dataset, killed, "--workers", "1") == 0
    assert f"(0 audited now, {len(PROBLEMS)} resumed)" in counts_line(capsys.readouterr().out)
    assert (killed / "audit" / "audit.csv").read_bytes() == audit  # rebuilt from the journal


def test_other_settings_are_refused(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert solve(dataset, out, "--ids", "bad") == 0
    # The audit states its budget, in work: the same at any machine load (issue 26).
    assert "20000 steps of conflict search per unsolved problem" in capsys.readouterr().out
    before = (out / "audit" / "results.jsonl").read_bytes()
    args = ["geobuild-solve", "--dataset", str(dataset), "--out", str(out), "--ids", "bad"]
    assert cli.main(args + ["--restarts", "4"]) == 2
    assert "restarts=3 (now 4)" in capsys.readouterr().err
    assert cli.main(args + ["--restarts", "3", "--conflict-steps", "9"]) == 2
    assert "conflict_steps=20000 (now 9)" in capsys.readouterr().err
    assert (out / "audit" / "results.jsonl").read_bytes() == before


def test_journal_skips_a_torn_last_line_and_appends_after_it(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with Journal(path) as journal:
        journal.append({"id": "a", "status": "solved"})
    with path.open("ab") as f:
        f.write(b'{"id": "b", "sta')  # a writer killed mid-record
    records, torn = read_journal(path, "id")
    assert list(records) == ["a"] and torn == 1
    with Journal(path) as journal:
        journal.append({"id": "c", "status": "solved"})
    records, torn = read_journal(path, "id")
    assert list(records) == ["a", "c"] and torn == 0


@pytest.mark.parametrize("extra", [("--ids", "nope"), ("--restarts", "0"), ("--workers", "0")])
def test_bad_options_exit_2_and_write_nothing(
    dataset: Path, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    args = ["geobuild-solve", "--dataset", str(dataset), "--out", str(out), *extra]
    assert cli.main(args) == 2
    assert not out.exists()


def test_missing_dataset_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert solve(tmp_path / "absent.json", out) == 2
    assert "absent.json" in capsys.readouterr().err
    assert not out.exists()


def test_solver_engine_replies_with_the_audit_programs(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import geometry.dsl.solver as solver
    from actors.solver_engine import SolverEngine
    from pipelines.geobuild.engines import resolve_engine

    out = tmp_path / "out"
    assert solve(dataset, out, "--ids", "iso,clash", "--workers", "1") == 0
    programs = {
        json.loads(line)["id"]: json.loads(line)["dsl"]
        for line in (out / "audit" / "programs.jsonl").read_text(encoding="utf-8").splitlines()
    }
    cfg = resolve_engine("solver", str(out), None).cfg
    assert cfg.revision.startswith("audit-")  # not the fresh solver's revision
    solved: list[str] = []
    real = solver.solve_problem
    monkeypatch.setattr(solver, "solve_problem", lambda p, *a: solved.append(p.id) or real(p, *a))
    engine = SolverEngine(cfg.repo, restarts=3)
    assert engine.reply("iso") == f"```\n{programs['iso']}\n```"
    assert engine.reply("clash") == ""
    assert solved == []  # both came from the audit
    # A problem the audit lacks is solved from the data file the audit recorded.
    assert engine.reply("circle").startswith("```\n") and solved == ["circle"]
