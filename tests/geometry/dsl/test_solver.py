"""The constructibility solver: hand-made problems, conflicts, determinism, real data."""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path

import pytest

from geometry.dsl.dataset import Problem, load_problems, parse_problem
from geometry.dsl.executor import execute
from geometry.dsl.scene import Point
from geometry.dsl.solver import DATA_ERROR, NO_CONSTRUCTION, SOLVED, Budget, solve_problem
from geometry.dsl.validator import validate

DATA = Path("/work/shared/geobuildbench")
QUICK = Budget()


def problem(conditions: list[dict], **required: object) -> Problem:
    return parse_problem(
        {"id": "t", "required_objects": required, "verification_conditions": conditions}
    )


def assert_valid(p: Problem, program: str | None) -> None:
    """The written program runs in the real executor and the real validator accepts it."""
    assert program is not None
    execution = execute(program)
    assert execution.error is None, execution.error
    verdict = validate(p, execution.scene)
    assert verdict.success, verdict.to_json()


def points(program: str) -> dict[str, Point]:
    return execute(program).scene.points()


def test_right_triangle_with_circumcircle() -> None:
    p = problem(
        [
            {"type": "angle_value", "points": [["A", "C", "B"]], "value": 90},
            {"type": "midpoint_of", "point": "O", "segment": ["A", "B"]},
            {"type": "point_on_circle", "point": "C", "circle_center": "O"},
            {"type": "angle_value", "points": [["C", "A", "B"]], "value": 30},
        ],
        points=["A", "B", "C", "O"],
        segments=[["A", "B"], ["B", "C"], ["C", "A"]],
        circles=[{"center": "O", "radius_point": "A"}],
    )
    result = solve_problem(p, budget=QUICK)
    assert result.status == SOLVED
    assert_valid(p, result.program)
    pts = points(result.program or "")
    # Thales: the hypotenuse is twice the shorter leg opposite 30°.
    assert pts["A"].distance(pts["B"]) == pytest.approx(2 * pts["B"].distance(pts["C"]), rel=1e-6)


def test_angle_bisector_meets_the_opposite_side() -> None:
    p = problem(
        [
            {"type": "angle_value", "points": [["A", "B", "C"]], "value": 80},
            {"type": "angle_bisector", "line": ["B", "D"], "angle_points": ["A", "B", "C"]},
            {"type": "point_on_segment", "point": "D", "segment": ["A", "C"]},
            {"type": "triangle_valid", "points": ["A", "B", "C"]},
        ],
        points=["A", "B", "C", "D"],
        segments=[["B", "D"]],
    )
    result = solve_problem(p, budget=QUICK)
    assert result.status == SOLVED
    assert_valid(p, result.program)


def test_square_with_a_given_side() -> None:
    p = problem(
        [
            {"type": "polygon_property", "polygon": ["A", "B", "C", "D"], "property": "square"},
            {"type": "distance_equals", "segment": ["A", "B"], "value": 4},
        ],
        polygons=[["A", "B", "C", "D"]],
    )
    result = solve_problem(p, budget=QUICK)
    assert result.status == SOLVED
    assert_valid(p, result.program)
    pts = points(result.program or "")
    assert pts["A"].distance(pts["C"]) == pytest.approx(4 * math.sqrt(2), rel=1e-6)


def test_named_tangent_line_and_undrawn_circle() -> None:
    # Line l and the circle at O exist only through conditions: the program must draw both.
    p = problem(
        [
            {"type": "tangent_at_point", "line": "l", "center": "O", "tangent_point": "T"},
            {"type": "point_on_line", "point": "P", "line": "l"},
            {"type": "distance_equals", "segment": ["P", "T"], "value": 3},
        ],
        lines=["l"],
    )
    result = solve_problem(p, budget=QUICK)
    assert result.status == SOLVED
    assert_valid(p, result.program)


def test_contradictory_angles_are_named_as_the_conflict() -> None:
    angle_30 = {"type": "angle_value", "points": [["A", "B", "C"]], "value": 30}
    angle_60 = {"type": "angle_value", "points": [["A", "B", "C"]], "value": 60}
    p = problem(
        [
            angle_30,
            {"type": "distance_equals", "segment": ["A", "B"], "value": 5},
            angle_60,
            {"type": "triangle_valid", "points": ["A", "B", "C"]},
        ]
    )
    result = solve_problem(p, restarts=3, budget=QUICK)
    assert result.status == NO_CONSTRUCTION
    assert result.program is None
    assert set(result.conflicts) == {
        "angle_value(angle=ABC, value=30)",
        "angle_value(angle=ABC, value=60)",
    }
    assert result.residual > 1e-3


CONTRADICTION = [
    {"type": "angle_value", "points": [["A", "B", "C"]], "value": 30},
    {"type": "distance_equals", "segment": ["A", "B"], "value": 5},
    {"type": "angle_value", "points": [["A", "B", "C"]], "value": 60},
    {"type": "triangle_valid", "points": ["A", "B", "C"]},
]


def test_the_result_does_not_depend_on_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26: with wall-clock budgets the audit solved 455, 454 or 452 problems by load.
    Under a clock that jumps an hour at every reading (a machine slowed to a crawl) every
    result is the same, exactly: the full search and one cut short by its step budget."""
    p = problem(CONTRADICTION)
    budgets = (QUICK, Budget(conflict_steps=1))
    calm = [solve_problem(p, restarts=3, budget=b) for b in budgets]
    clock = itertools.count(start=0.0, step=3600.0)
    for name in ("monotonic", "perf_counter", "time"):
        monkeypatch.setattr(time, name, lambda: float(next(clock)))
    slow = [solve_problem(p, restarts=3, budget=b) for b in budgets]
    assert slow == calm
    full, cut = calm
    assert full.restarts == 3 and "found by deletion" in full.reason
    assert len(full.conflicts) == 2
    # One step: the search stops before its first subset, with every condition still in.
    assert "cut short by its budget of 1 steps" in cut.reason
    assert len(cut.conflicts) == len(CONTRADICTION)


def test_same_problem_same_result() -> None:
    p = problem(
        [
            {"type": "angle_value", "points": [["B", "A", "C"]], "value": 50},
            {"type": "segment_equality", "segments": [["A", "B"], ["A", "C"]]},
        ],
        segments=[["B", "C"]],
    )
    assert solve_problem(p, budget=QUICK) == solve_problem(p, budget=QUICK)


@pytest.mark.parametrize(
    "condition",
    [
        {"type": "no_such_condition", "points": ["A", "B"]},
        {"type": "angle_value", "points": [["A", "B"]], "value": 30},
    ],
)
def test_uninterpretable_data_is_a_data_error(condition: dict) -> None:
    result = solve_problem(problem([condition]))
    assert result.status == DATA_ERROR
    assert result.program is None and result.reason


def test_problem_without_points_is_trivially_solved() -> None:
    result = solve_problem(problem([]))
    assert result.status == SOLVED
    assert_valid(problem([]), result.program)


# Real problems spread over the data set, each a textbook figure that can be drawn.
REAL_IDS = ["367", "17", "75", "164", "401", "625", "880", "1027", "1129", "2626"]


@pytest.mark.skipif(not DATA.is_dir(), reason="GeoBuild data not available")
def test_real_problems_solve_and_validate() -> None:
    problems = {p.id: p for p in load_problems(DATA, "en")}
    for problem_id in REAL_IDS:
        result = solve_problem(problems[problem_id], budget=QUICK)
        assert result.status == SOLVED, (problem_id, result.reason)
        assert_valid(problems[problem_id], result.program)


@pytest.mark.skipif(not DATA.is_dir(), reason="GeoBuild data not available")
def test_real_contradiction_is_reported() -> None:
    # 1162: C on chord AB and on the circle forces C onto A or B (every minimal
    # conflicting set holds both conditions, with OC ⊥ AB or with B on the circle).
    p = next(p for p in load_problems(DATA, "en") if p.id == "1162")
    result = solve_problem(p, restarts=4, budget=QUICK)
    assert result.status == NO_CONSTRUCTION
    assert "point_on_segment(point=C, segment=AB)" in result.conflicts
    assert "point_on_circle(point=C, center=O)" in result.conflicts
    assert len(result.conflicts) < len(p.conditions)
