"""`geobuild-check` end to end: real problem 367, a program written by hand, then broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pipelines.cli
from tests.conftest import SHARED

DATA = SHARED / "geobuildbench"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"GeoBuild data not found at {DATA}")

# Problem 367: quadrilateral ABCD inscribed in circle O, angle AOC = 100 degrees.
PROGRAM_367 = """\
point : 0 0 -> O
point : 5 0 -> A
circle : O A -> c
rotate : A 100° O -> C
rotate : A 200° O -> D
rotate : A -60° O -> B
polygon : A B C D -> q AB BC CD DA
"""


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        pipelines.cli.COMMANDS, "geobuild-check", ("pipelines.geobuild.check", "validate programs")
    )


def run_check(tmp_path: Path, lines: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    programs = tmp_path / "programs.jsonl"
    programs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = pipelines.cli.main(
        ["geobuild-check", "--dataset", str(DATA), "--programs", str(programs)]
    )
    assert code == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@needs_data
def test_correct_program_succeeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (verdict,) = run_check(tmp_path, [json.dumps({"id": "367", "dsl": PROGRAM_367})], capsys)
    assert verdict["id"] == "367"
    assert verdict["success"] is True, verdict
    assert verdict["success_public"] is True
    assert verdict["object_score"] == 1.0 and verdict["condition_score"] == 1.0
    assert verdict["execution_error"] is None


@needs_data
def test_broken_programs_report_reasons_in_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong_angle = PROGRAM_367.replace("100°", "97.2°")
    off_circle = PROGRAM_367.replace("rotate : A 200° O -> D", "point : -4 -4 -> D")
    error_midway = PROGRAM_367.replace("circle : O A -> c", "circle : O Z -> c")
    lines = [
        json.dumps({"id": "367", "dsl": wrong_angle}),
        "{not json",
        json.dumps({"id": "no-such-problem", "dsl": "point : 0 0 -> A"}),
        json.dumps({"id": "367", "dsl": off_circle}),
        json.dumps({"id": "367", "dsl": error_midway}),
    ]
    angle, malformed, unknown, circle, stopped = run_check(tmp_path, lines, capsys)

    assert angle["success"] is False
    assert angle["failed_conditions"] == [
        {"type": "angle_value", "reason": "angle AOC is 97.2°, expected 100°"}
    ]
    assert angle["condition_score"] == pytest.approx(4 / 5)
    assert angle["success_public"] is False  # 4/5 conditions is below the public 0.9

    assert malformed["success_public"] is False

    assert malformed["error"] and "not JSON" in malformed["error"]
    assert unknown["id"] == "no-such-problem" and "unknown problem id" in unknown["error"]

    assert [f["type"] for f in circle["failed_conditions"]] == ["point_on_circle"]
    assert "D is" in circle["failed_conditions"][0]["reason"]

    assert stopped["success"] is False
    assert stopped["execution_error"]["line"] == 3
    # Nothing after line 3 was built: circle, C, D, B and the polygon are missing.
    assert "point C" in stopped["missing_objects"]
    assert "circle O through A" in stopped["missing_objects"]
    assert stopped["success_public"] is False


@needs_data
def test_error_after_a_complete_figure_is_no_public_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Everything required is built before the bad last line; the public benchmark never
    # validates a program that stopped, so neither verdict is a success.
    late_error = PROGRAM_367 + "segment : A Z -> AZ\n"
    (verdict,) = run_check(tmp_path, [json.dumps({"id": "367", "dsl": late_error})], capsys)
    assert verdict["execution_error"]["line"] == 8
    assert verdict["object_score"] == 1.0 and verdict["condition_score"] == 1.0
    assert verdict["success"] is False and verdict["success_public"] is False


def test_missing_dataset_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    programs = tmp_path / "p.jsonl"
    programs.write_text("", encoding="utf-8")
    code = pipelines.cli.main(
        ["geobuild-check", "--dataset", str(tmp_path / "absent"), "--programs", str(programs)]
    )
    assert code == 2
    assert "absent" in capsys.readouterr().err
