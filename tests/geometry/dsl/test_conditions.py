"""Each GeoBuild condition type on a hand-built figure where it holds and one where it fails.

Coordinates are chosen so the truth is known by hand (3-4-5 triangles, right angles, unit
circles), independent of the code under test.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from geometry.dsl.conditions import CHECKS, evaluate
from geometry.dsl.conditions.figure import Figure
from geometry.dsl.conditions.normalise import normalise_condition
from geometry.dsl.scene import Circle, Line, Point, Scene

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "geobuildbench"
C45 = 5 * math.cos(math.radians(45))


def scene(*extras: tuple[str, object], **coords: tuple[float, float]) -> Scene:
    """Points by keyword (A=(0, 0)); primes spelt with a trailing _p (A_p -> A')."""
    objects: dict[str, object] = {
        name.replace("_p", "'"): Point(float(x), float(y)) for name, (x, y) in coords.items()
    }
    objects.update(dict(extras))
    return Scene(objects)  # type: ignore[arg-type]


def circle(label: str, cx: float, cy: float, r: float) -> tuple[str, object]:
    return label, Circle(Point(cx, cy), r)


def line(label: str, p: tuple[float, float], q: tuple[float, float]) -> tuple[str, object]:
    return label, Line(Point(*p), Point(*q))


def holds(raw: dict, sc: Scene) -> tuple[bool, str]:
    condition, _ = normalise_condition(raw)
    assert condition.error is None, condition.error
    return evaluate(condition, Figure.of(sc))


O5 = circle("c", 0, 0, 5)
HEX = {
    n: (math.cos(math.radians(60 * i)), math.sin(math.radians(60 * i)))
    for i, n in enumerate("ABCDEF")
}
D_X = 23 / 8  # the intersection of x^2+y^2=16 and (x-4)^2+y^2=9
D_Y = math.sqrt(16 - D_X**2)

# (condition, scene where it holds, scene where it fails)
CASES: list[tuple[dict, Scene, Scene]] = [
    (
        {"type": "angle_value", "points": [["A", "O", "C"]], "value": 90},
        scene(A=(1, 0), O=(0, 0), C=(0, 3)),
        scene(A=(1, 0), O=(0, 0), C=(1, 1)),
    ),
    (
        {"type": "angle_value", "points": [["A", "O", "C"]], "value": 200},  # reflex: 160°
        scene(A=(1, 0), O=(0, 0), C=(math.cos(math.radians(160)), math.sin(math.radians(160)))),
        scene(A=(1, 0), O=(0, 0), C=(0, 1)),
    ),
    (
        {"type": "point_on_circle", "point": "P", "circle_center": "O"},
        scene(O5, O=(0, 0), P=(3, 4)),
        scene(O5, O=(0, 0), P=(3, 5)),
    ),
    (
        {"type": "point_on_segment", "point": "P", "segment": ["A", "B"]},
        scene(A=(0, 0), B=(4, 0), P=(1, 0)),
        scene(A=(0, 0), B=(4, 0), P=(5, 0)),
    ),
    (
        {"type": "distance_equals", "segment": [["A", "B"]], "value": 5},
        scene(A=(0, 0), B=(3, 4)),
        scene(A=(0, 0), B=(3, 5)),
    ),
    (
        {"type": "distance_equals", "segment": ["O", "AB"], "value": 3},  # point to line AB
        scene(O=(1, 3), A=(0, 0), B=(4, 0)),
        scene(O=(1, 4), A=(0, 0), B=(4, 0)),
    ),
    (
        {"type": "triangle_valid", "points": ["A", "B", "C"]},
        scene(A=(0, 0), B=(4, 0), C=(0, 3)),
        scene(A=(0, 0), B=(1, 1), C=(2, 2)),
    ),
    (
        {"type": "perpendicular", "objects": [["A", "B"], ["C", "D"]]},
        scene(A=(0, 0), B=(2, 1), C=(0, 0), D=(-1, 2)),
        scene(A=(0, 0), B=(2, 1), C=(0, 0), D=(-1, 3)),
    ),
    (
        {"type": "perpendicular", "objects": [["A", "B"], ["m"]]},
        scene(line("m", (5, 0), (5, 1)), A=(0, 0), B=(2, 0)),
        scene(line("m", (5, 0), (6, 1)), A=(0, 0), B=(2, 0)),
    ),
    (
        {"type": "point_on_line", "point": "P", "line": "l"},
        scene(line("l", (0, 0), (1, 1)), P=(5, 5)),
        scene(line("l", (0, 0), (1, 1)), P=(5, 6)),
    ),
    (
        {"type": "parallel", "objects": [["A", "B"], ["C", "D"]]},
        scene(A=(0, 0), B=(2, 1), C=(0, 3), D=(4, 5)),
        scene(A=(0, 0), B=(2, 1), C=(0, 3), D=(4, 6)),
    ),
    (
        {"type": "segment_equality", "segments": [["A", "B"], ["A", "C"]]},
        scene(A=(0, 0), B=(3, 4), C=(5, 0)),
        scene(A=(0, 0), B=(3, 4), C=(4, 0)),
    ),
    (
        {"type": "segment_equality", "objects": [["A", "B"], ["C", "A"]]},
        scene(A=(0, 0), B=(0, 2), C=(2, 0)),
        scene(A=(0, 0), B=(0, 2), C=(3, 0)),
    ),
    (
        {"type": "angle_bisector", "line": ["B", "E"], "angle_points": ["A", "B", "C"]},
        scene(A=(1, 0), B=(0, 0), C=(0, 1), E=(2, 2)),
        scene(A=(1, 0), B=(0, 0), C=(0, 1), E=(2, 1)),
    ),
    (
        {"type": "midpoint_of", "point": "M", "segment": ["A", "B"]},
        scene(M=(2, 1), A=(0, 0), B=(4, 2)),
        scene(M=(2, 1.5), A=(0, 0), B=(4, 2)),
    ),
    (
        {"type": "concyclic", "points": ["A", "B", "C", "D"]},
        scene(A=(5, 0), B=(0, 5), C=(-5, 0), D=(3, -4)),
        scene(A=(5, 0), B=(0, 5), C=(-5, 0), D=(3, -5)),
    ),
    (
        {
            "type": "tangent_at_point",
            "line": ["A", "B"],
            "circle_center": "O",
            "tangent_point": "T",
        },
        scene(O5, O=(0, 0), T=(0, 5), A=(-3, 5), B=(4, 5)),
        scene(O5, O=(0, 0), T=(0, 5), A=(-3, 5), B=(4, 6)),
    ),
    (
        {"type": "tangent_at_point", "line": ["T", "B"], "circle_center": "O", "point": "T"},
        scene(O5, O=(0, 0), T=(3, 4), B=(7, 1)),
        scene(O5, O=(0, 0), T=(3, 4), B=(7, 2)),
    ),
    (
        {"type": "angle_equality", "points": [["A", "B", "C"], ["D", "E", "F"]]},
        scene(A=(1, 0), B=(0, 0), C=(1, 1), D=(0, 5), E=(0, 3), F=(2, 5)),
        scene(A=(1, 0), B=(0, 0), C=(1, 1), D=(0, 5), E=(0, 3), F=(2, 4)),
    ),
    (
        {"type": "diameter", "segment": ["A", "B"], "circle_center": "O"},
        scene(O5, O=(0, 0), A=(-5, 0), B=(5, 0)),
        scene(O5, O=(0, 0), A=(-5, 0), B=(4, 3)),
    ),
    (
        {"type": "collinear", "points": ["A", "B", "C"]},
        scene(A=(0, 0), B=(1, 1), C=(3, 3)),
        scene(A=(0, 0), B=(1, 1), C=(3, 4)),
    ),
    (
        {
            "type": "angle_sum",
            "angles": [{"points": ["A", "B", "C"]}, {"points": [["D", "E", "F"]]}],
            "value": 135,
        },
        scene(A=(1, 0), B=(0, 0), C=(0, 1), D=(1, 0), E=(0, 0), F=(1, 1)),
        scene(A=(1, 0), B=(0, 0), C=(0, 1), D=(1, 0), E=(0, 0), F=(0, 1)),
    ),
    (
        {"type": "perimeter", "polygon": ["A", "B", "C"], "value": 12},
        scene(A=(0, 0), B=(3, 0), C=(0, 4)),
        scene(A=(0, 0), B=(30, 0), C=(0, 40)),
    ),
    (
        {"type": "point_on_line_extension", "point": "P", "line_segment": ["A", "B"]},
        scene(A=(0, 0), B=(2, 0), P=(3, 0)),
        scene(A=(0, 0), B=(2, 0), P=(1, 0)),
    ),
    (
        {"type": "point_on_segment_extension", "point": "P", "segment": ["A", "B"]},
        scene(A=(0, 0), B=(2, 0), P=(-1, 0)),
        scene(A=(0, 0), B=(2, 0), P=(3, 1)),
    ),
    (
        {
            "type": "geometric_transformation",
            "transformation": "rotation",
            "center": "C",
            "preimage_points": ["A", "B", "C"],
            "image_points": ["A′", "B′", "C"],
        },
        scene(C=(0, 0), A=(1, 0), B=(2, 0), A_p=(0, 1), B_p=(0, 2)),
        scene(C=(0, 0), A=(1, 0), B=(2, 0), A_p=(0, 1), B_p=(0, -2)),
    ),
    (
        {"type": "not_collinear", "points": ["A", "B", "C"]},
        scene(A=(0, 0), B=(1, 0), C=(0, 1)),
        scene(A=(0, 0), B=(1, 0), C=(2, 0)),
    ),
    (
        {"type": "tangent", "line": ["A", "B"], "circle_center": "O"},
        scene(O5, O=(0, 0), A=(-1, 5), B=(1, 5)),
        scene(O5, O=(0, 0), A=(-1, 4), B=(1, 4)),
    ),
    (
        {"type": "perpendicular_bisector", "line": ["l"], "segment": ["A", "B"]},
        scene(line("l", (2, -1), (2, 5)), A=(0, 0), B=(4, 0)),
        scene(line("l", (3, -1), (3, 5)), A=(0, 0), B=(4, 0)),
    ),
    (
        {"type": "point_incenter", "point": "I", "triangle": ["A", "B", "C"]},
        scene(A=(0, 0), B=(4, 0), C=(0, 3), I=(1, 1)),
        scene(A=(0, 0), B=(4, 0), C=(0, 3), I=(1, 1.2)),
    ),
    (
        {"type": "point_above_line", "point": "P", "line": ["A", "B"]},
        scene(A=(0, 0), B=(4, 0), P=(1, 2)),
        scene(A=(0, 0), B=(4, 0), P=(1, -2)),
    ),
    (
        {"type": "midpoint_of_arc", "point": "M", "arc": ["A", "B"]},
        scene(O5, A=(5, 0), B=(0, 5), M=(C45, C45)),
        scene(O5, A=(5, 0), B=(0, 5), M=(4, 3)),
    ),
    (
        {"type": "same_side", "points": ["C", "O"], "line": ["A", "B"]},
        scene(A=(0, 0), B=(4, 0), C=(1, 1), O=(2, 3)),
        scene(A=(0, 0), B=(4, 0), C=(1, 1), O=(2, -3)),
    ),
    (
        {
            "type": "angle_ratio",
            "angle1": [["C", "B", "D"]],
            "angle2": [["B", "D", "C"]],
            "ratio": [2, 1],
        },
        # angle B = 60°, angle D = 30° in a right triangle with BD = 2, BC = 1
        scene(B=(0, 0), C=(0.5, math.sqrt(3) / 2), D=(2, 0)),
        scene(B=(0, 0), C=(0, 1), D=(math.sqrt(3), 0)),
    ),
    (
        {"type": "point_on_arc", "point": "D", "arc": ["A", "C"], "arc_type": "major"},
        scene(O5, A=(5, 0), C=(0, 5), D=(-5, 0)),
        scene(O5, A=(5, 0), C=(0, 5), D=(C45, C45)),
    ),
    (
        {"type": "point_outside_line", "point": "A", "line": "l"},
        scene(line("l", (0, 0), (1, 0)), A=(0, 2)),
        scene(line("l", (0, 0), (1, 0)), A=(7, 0)),
    ),
    (
        {
            "type": "point_intersection",
            "point": "D",
            "objects": [
                {"circle_center": "A", "radius_point": "C"},
                {"circle_center": "C", "radius_point": "B"},
            ],
        },
        scene(A=(0, 0), C=(4, 0), B=(7, 0), D=(D_X, D_Y)),
        scene(A=(0, 0), C=(4, 0), B=(7, 0), D=(3, 3)),
    ),
    (
        {"type": "order_on_line", "points": ["A", "B", "C", "D"], "line": "L"},
        scene(line("L", (0, 0), (1, 0)), A=(3, 0), B=(2, 0), C=(1, 0), D=(0, 0)),
        scene(line("L", (0, 0), (1, 0)), A=(1, 0), B=(0, 0), C=(2, 0), D=(3, 0)),
    ),
    (
        {
            "type": "isosceles_triangle",
            "points": ["A", "B", "C"],
            "equal_sides": [["A", "B"], ["A", "C"]],
        },
        scene(A=(0, 3), B=(-2, 0), C=(2, 0)),
        scene(A=(0, 3), B=(-2, 0), C=(3, 0)),
    ),
    (
        {"type": "intersection", "points": ["E"], "objects": [["A", "B′"], ["C", "D"]]},
        scene(A=(0, 0), B_p=(2, 2), C=(0, 4), D=(4, 0), E=(2, 2)),
        scene(A=(0, 0), B_p=(2, 2), C=(0, 4), D=(4, 0), E=(1, 3)),
    ),
    (
        {"type": "intersection_point", "point": "O", "lines": [["A", "C"], ["B", "D"]]},
        scene(A=(0, 0), C=(4, 4), B=(4, 0), D=(0, 4), O=(2, 2)),
        scene(A=(0, 0), C=(4, 4), B=(4, 0), D=(0, 4), O=(2, 2.5)),
    ),
    (
        {"type": "regular_polygon", "polygon_points": list("ABCDEF"), "sides": 6},
        scene(**HEX),
        scene(**{**HEX, "A": (1.2, 0)}),
    ),
    (
        {"type": "point_inside_circle", "point": "P", "circle_center": "O", "radius": 10},
        scene(O=(0, 0), P=(6, 0)),
        scene(O=(0, 0), P=(11, 0)),
    ),
    (
        {
            "type": "rotation",
            "center": "C",
            "angle": 90,
            "direction": "counterclockwise",
            "preimage_points": ["A"],
            "image_points": ["A'"],
        },
        scene(C=(0, 0), A=(1, 0), A_p=(0, 1)),
        scene(C=(0, 0), A=(1, 0), A_p=(0, -1)),
    ),
    (
        {
            "type": "rotation",
            "center": "C",
            "angle": 90,
            "direction": "clockwise",
            "preimage_points": ["A"],
            "image_points": ["A'"],
        },
        scene(C=(0, 0), A=(1, 0), A_p=(0, -1)),
        scene(C=(0, 0), A=(1, 0), A_p=(0, 1)),
    ),
]

SQUARE_CCW = {"A": (0, 0), "B": (2, 0), "C": (2, 2), "D": (0, 2)}
SQUARE_CW = {"A": (0, 0), "B": (0, 2), "C": (2, 2), "D": (2, 0)}
RHOMBUS = {"A": (0, 0), "B": (3, 4), "C": (8, 4), "D": (5, 0)}  # sides 5, not a rectangle
RECT = {"A": (0, 0), "B": (4, 0), "C": (4, 1), "D": (0, 1)}
PARALLELOGRAM = {"A": (0, 0), "B": (4, 0), "C": (5, 1), "D": (1, 1)}
KITE = {"A": (0, 0), "B": (2, -1), "C": (5, 0), "D": (2, 1)}
POLYGON_CASES = [
    ("square", SQUARE_CCW, RECT),
    ("square", SQUARE_CW, RHOMBUS),
    ("rectangle", RECT, PARALLELOGRAM),
    ("rhombus", RHOMBUS, RECT),
    ("parallelogram", PARALLELOGRAM, KITE),
    ("parallelogram", SQUARE_CW, {**SQUARE_CW, "B": (2, 2), "C": (0, 2)}),  # self-crossing
]


@pytest.mark.parametrize(("raw", "good", "bad"), CASES, ids=[c[0]["type"] for c in CASES])
def test_condition_holds_and_fails(raw: dict, good: Scene, bad: Scene) -> None:
    ok, reason = holds(raw, good)
    assert ok, reason
    ok, reason = holds(raw, bad)
    assert not ok
    assert reason


@pytest.mark.parametrize(("kind", "good", "bad"), POLYGON_CASES)
def test_polygon_property(kind: str, good: dict, bad: dict) -> None:
    raw = {"type": "polygon_property", "polygon": list("ABCD"), "property": kind}
    assert holds(raw, scene(**good))[0]
    ok, reason = holds(raw, scene(**bad))
    assert not ok and kind in reason


def test_square_passes_from_any_starting_vertex_and_direction() -> None:
    for start in range(4):
        for order in ("ABCD", "ADCB"):
            labels = [order[(start + i) % 4] for i in range(4)]
            raw = {"type": "polygon_property", "polygon": labels, "property": "square"}
            assert holds(raw, scene(**SQUARE_CCW))[0], labels


def test_perimeter_is_compared_in_the_figures_own_units() -> None:
    raw = {"type": "perimeter", "polygon": ["A", "B", "C"], "value": 120}
    assert holds(raw, scene(A=(0, 0), B=(30, 0), C=(0, 40)))[0]
    ok, reason = holds(raw, scene(A=(0, 0), B=(3, 0), C=(0, 4)))
    assert not ok and "12" in reason


@pytest.mark.parametrize("size", [1.0, 1000.0])
def test_collinearity_is_scale_relative(size: float) -> None:
    raw = {"type": "collinear", "points": ["A", "B", "C"]}
    # A bulge of 1e-5 of the figure is collinear, 1e-2 of it is not, at any size.
    nearly = scene(A=(0, 0), B=(size, 0), C=(size / 2, size * 1e-5))
    clearly_off = scene(A=(0, 0), B=(size, 0), C=(size / 2, size * 1e-2))
    assert holds(raw, nearly)[0]
    assert not holds(raw, clearly_off)[0]
    assert holds({"type": "not_collinear", "points": ["A", "B", "C"]}, clearly_off)[0]


def test_angle_failure_reason_reports_measured_and_expected() -> None:
    c97 = (math.cos(math.radians(97.2)), math.sin(math.radians(97.2)))
    ok, reason = holds(
        {"type": "angle_value", "points": [["A", "O", "C"]], "value": 100},
        scene(A=(1, 0), O=(0, 0), C=c97),
    )
    assert not ok
    assert reason == "angle AOC is 97.2°, expected 100°"


def test_missing_label_fails_with_reason() -> None:
    ok, reason = holds(
        {"type": "midpoint_of", "point": "M", "segment": ["A", "B"]}, scene(A=(0, 0), B=(2, 0))
    )
    assert not ok and "point M is not in the figure" in reason


def test_circle_condition_without_a_circle_fails_with_reason() -> None:
    ok, reason = holds(
        {"type": "point_on_circle", "point": "P", "circle_center": "O"}, scene(O=(0, 0), P=(3, 4))
    )
    assert not ok and "no circle centred at O" in reason


def test_unreadable_condition_fails_as_data_error() -> None:
    condition, notes = normalise_condition(
        {"type": "segment_equality", "segments": [["A", "B"], ["O", "O"]]}
    )
    assert condition.error and notes
    ok, reason = evaluate(condition, Figure.of(scene(A=(0, 0), B=(1, 0), O=(0, 0))))
    assert not ok and reason.startswith("data error")


def test_every_condition_type_has_a_check_and_a_case() -> None:
    covered = {raw["type"] for raw, _, _ in CASES} | {"polygon_property"}
    assert covered <= set(CHECKS)
    if not DATA.is_dir():
        pytest.skip(f"GeoBuild data not found at {DATA}")
    from geometry.dsl.dataset import load_problems

    in_data = {c.type for p in load_problems(DATA) for c in p.conditions}
    assert len(in_data) >= 40
    assert in_data <= set(CHECKS)
    assert in_data <= covered
