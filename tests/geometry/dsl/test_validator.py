"""The validator's object matching and scores on hand-built scenes."""

from __future__ import annotations

import math

import pytest

from geometry.dsl.dataset import parse_problem
from geometry.dsl.scene import Circle, Line, Point, Polygon, Scene, Segment
from geometry.dsl.validator import validate

A, B, C, D, ORIGIN = Point(0, 5), Point(5, 0), Point(0, -5), Point(-5, 0), Point(0, 0)

PROBLEM = parse_problem(
    {
        "id": "t",
        "required_objects": {
            "points": ["A", "B", "C", "D", "O"],
            "segments": [["A", "B"], ["C", "D"]],
            "lines": [["A", "C"]],
            "circles": [{"center": "O", "radius_point": "A"}],
            "polygons": [["A", "B", "C", "D"]],
        },
        "verification_conditions": [
            {"type": "point_on_circle", "point": "B", "circle_center": "O"},
            {"type": "angle_value", "points": [["A", "O", "B"]], "value": 90},
            {"type": "polygon_property", "polygon": ["A", "B", "C", "D"], "property": "square"},
            {"type": "distance_equals", "segment": ["O", "A"], "value": 5},
        ],
    }
)


def full_scene() -> dict[str, object]:
    return {
        "A": A,
        "B": B,
        "C": C,
        "D": D,
        "O": ORIGIN,
        "s1": Segment(B, A),  # drawn B->A, required as AB
        "l": Line(C, A),
        "c": Circle(ORIGIN, 5.0),
        # drawn D C B A from C: a rotated, reversed vertex order
        "q": Polygon((C, B, A, D)),
    }


def test_complete_scene_succeeds() -> None:
    verdict = validate(PROBLEM, Scene(full_scene()))  # type: ignore[arg-type]
    # segment CD is an edge of the drawn polygon, so it is present
    assert verdict.missing_objects == ()
    assert verdict.failed_conditions == ()
    assert verdict.success and verdict.object_score == 1.0 and verdict.partial_score == 1.0


def test_scores_count_missing_objects_and_failed_conditions() -> None:
    objects = full_scene()
    del objects["q"], objects["l"]  # polygon gone (and with it segment CD), line AC gone
    objects["c"] = Circle(ORIGIN, 4.0)  # circle not through A: missing, and B is off it
    verdict = validate(PROBLEM, Scene(objects))  # type: ignore[arg-type]
    assert set(verdict.missing_objects) == {
        "segment CD",
        "line AC",
        "circle O through A",
        "polygon ABCD",
    }
    assert verdict.object_score == pytest.approx(6 / 10)
    assert [f.type for f in verdict.failed_conditions] == ["point_on_circle"]
    assert verdict.condition_score == pytest.approx(3 / 4)
    assert not verdict.success
    assert verdict.partial_score == pytest.approx(0.3 * 0.6 + 0.7 * 0.75)


def test_missing_point_fails_its_conditions_with_reason() -> None:
    objects = full_scene()
    del objects["B"]
    verdict = validate(PROBLEM, Scene(objects))  # type: ignore[arg-type]
    assert "point B" in verdict.missing_objects
    reasons = {f.type: f.reason for f in verdict.failed_conditions}
    assert set(reasons) == {"point_on_circle", "angle_value", "polygon_property"}
    assert all("point B is not in the figure" in r for r in reasons.values())


def test_wrong_segment_and_polygon_do_not_match() -> None:
    objects = full_scene()
    objects["s1"] = Segment(A, C)
    objects["q"] = Polygon((A, C, B, D))  # same vertices, crossing order
    verdict = validate(PROBLEM, Scene(objects))  # type: ignore[arg-type]
    assert {"segment AB", "segment CD", "polygon ABCD"} <= set(verdict.missing_objects)


def test_circle_with_radius_length_and_named_line() -> None:
    problem = parse_problem(
        {
            "id": "r",
            "required_objects": {
                "points": ["O"],
                "lines": ["l"],
                "circles": [{"center": "O", "radius_length": 6}],
            },
            "verification_conditions": [],
        }
    )
    good = Scene({"O": ORIGIN, "k": Circle(ORIGIN, 6.0), "l": Line(ORIGIN, Point(1, 1))})
    bad = Scene({"O": ORIGIN, "k": Circle(ORIGIN, 6.5), "m": Line(ORIGIN, Point(1, 1))})
    assert validate(problem, good).success
    assert validate(problem, good).condition_score == 1.0  # no conditions: vacuously all
    assert set(validate(problem, bad).missing_objects) == {"line l", "circle O of radius 6"}


def test_to_json_reports_reasons() -> None:
    objects = full_scene()
    objects["B"] = Point(5 * math.cos(math.radians(-7.2)), 5 * math.sin(math.radians(-7.2)))
    out = validate(PROBLEM, Scene(objects)).to_json()  # type: ignore[arg-type]
    assert out["success"] is False
    failed = {f["type"]: f["reason"] for f in out["failed_conditions"]}  # type: ignore[attr-defined]
    assert failed["angle_value"] == "angle AOB is 97.2°, expected 90°"
