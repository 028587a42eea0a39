"""`geobuild-solve`: writes programs.jsonl and audit.csv that geobuild-check accepts."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import pipelines.cli as cli
from geometry.dsl.dataset import load_problems
from pipelines.geobuild.check import check_lines

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
    return cli.main(args + ["--restarts", "3", "--conflict-seconds", "5"])


@pytest.mark.parametrize("workers", ["1", "2"])
def test_writes_programs_and_audit(dataset: Path, tmp_path: Path, workers: str) -> None:
    out = tmp_path / "out"
    assert solve(dataset, out, "--workers", workers) == 0
    with (out / "audit.csv").open(encoding="utf-8") as f:
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
    lines = (out / "programs.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["iso", "circle"]
    problems = {p.id: p for p in load_problems(dataset)}
    verdicts = list(check_lines(lines, problems))
    assert all(v["success"] for v in verdicts), verdicts


def test_ids_select_problems(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert solve(dataset, out, "--ids", "circle", "--workers", "1") == 0
    with (out / "audit.csv").open(encoding="utf-8") as f:
        assert [r["id"] for r in csv.DictReader(f)] == ["circle"]


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
