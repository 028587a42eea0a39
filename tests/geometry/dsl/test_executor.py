"""The executor: error categories with line numbers, determinism, `_`, limits."""

from __future__ import annotations

import math

import pytest

from geometry.dsl.errors import ERROR_CATEGORIES
from geometry.dsl.executor import Execution, execute
from geometry.dsl.limits import Limits
from geometry.dsl.scene import Arc, Circle, Line, Point, Ray, Segment

EXAMPLE = """\
point : 0 0 -> A
point : 100*cos(45°) 100*sin(45°) -> B
segment : A B -> seg_AB
circle : A B -> c
intersect : c seg_AB -> P
"""


def test_example_program_runs() -> None:
    result = execute(EXAMPLE)
    assert isinstance(result, Execution) and result.ok and result.error is None
    assert list(result.scene.objects) == ["A", "B", "seg_AB", "c", "P"]
    b = result.scene.objects["B"]
    assert isinstance(b, Point) and math.isclose(b.x, 50 * math.sqrt(2))
    c = result.scene.objects["c"]
    assert isinstance(c, Circle) and math.isclose(c.radius, 100)


# One failing program per category; the failing line is the last one, at the number given.
ERRORS = {
    "syntax": ("point : 0 0 -> A\npoint 1 1 -> B", 2, ["missing ':'"]),
    "undefined_label": ("point : 0 0 -> A\n\nsegment : A B -> s", 3, ["B", "not defined"]),
    "duplicate_label": ("point : 0 0 -> A\npoint : 1 1 -> A", 2, ["A", "already defined"]),
    "unknown_command": ("point : 0 0 -> A\nperpendicular : A -> l", 2, ["perpendicular"]),
    "bad_overload": (
        "point : 0 0 -> A\ncircle : A 5 -> c\nline : A c -> l",
        3,
        ["line does not take", "A (point), c (circle)", "line : point point -> line"],
    ),
    "output_count": ("point : 0 0 -> A\npoint : 1 1 -> B\nsegment : A B -> s t", 3, ["1", "2"]),
    "geometric": (
        "point : 1 1 -> A\npoint : 1 1 -> B\nsegment : A B -> s",
        3,
        ["A and B", "coincide"],
    ),
    "limit": ("point : 0 0 -> A\npoint : 1e7 0 -> B", 2, ["limit"]),
}


@pytest.mark.parametrize("category", ERROR_CATEGORIES)
def test_every_error_category_with_its_line(category: str) -> None:
    source, line, words = ERRORS[category]
    result = execute(source)
    assert result.error is not None
    assert (result.error.category, result.error.line) == (category, line)
    for word in words:
        assert word in result.error.message
    assert "A" in result.scene.objects  # objects built before the error are kept


def test_execution_stops_at_the_first_error() -> None:
    result = execute("point : 0 0 -> A\nsegment : A Z -> s\npoint : 1 1 -> B\nfoo : -> x")
    assert result.error is not None and result.error.line == 2
    assert list(result.scene.objects) == ["A"]


def test_duplicate_outputs_on_one_line() -> None:
    result = execute(
        "point : 0 0 -> O\ncircle : O 5 -> c\npoint : -9 1 -> A\npoint : 9 1 -> B\n"
        "line : A B -> l\nintersect : l c -> P P"
    )
    assert result.error is not None and result.error.category == "duplicate_label"
    assert "twice" in result.error.message


def test_unknown_command_suggests_a_close_name() -> None:
    result = execute("point : 0 0 -> A\npoint : 1 0 -> B\nmidpiont : A B -> M")
    assert result.error is not None and "midpoint" in result.error.message


def test_expression_using_a_point_is_a_type_error() -> None:
    result = execute("point : 0 0 -> A\npoint : A*2 0 -> B")
    assert result.error is not None and result.error.category == "bad_overload"
    assert "A is a point" in result.error.message


def test_discarded_outputs_are_computed_not_stored() -> None:
    result = execute(
        "point : 0 0 -> O\ncircle : O 5 -> c\npoint : -9 3 -> A\npoint : 9 3 -> B\n"
        "line : A B -> l\nintersect : l c -> _ Q  # keep only the second"
    )
    assert result.ok
    assert "_" not in result.scene.objects
    q = result.scene.objects["Q"]
    assert isinstance(q, Point) and (q.x, q.y) == pytest.approx((4, 3))


def test_comments_and_blank_lines_count_for_line_numbers() -> None:
    source = "# triangle\n\npoint : 0 0 -> A // origin\n   \npoint : 0 0 -> A"
    result = execute(source)
    assert result.error is not None and result.error.line == 5


FREE = """\
point : -> A
point : -> B
point : -> C
segment : A B -> s
circle : A C -> c
line : B C -> l
ray : C A -> r
semicircle : A B -> arc
point : s -> P
point : c -> Q
point : l -> R
point : r -> S
point : arc -> T
"""


def test_same_program_same_scene() -> None:
    assert execute(FREE) == execute(FREE)


def test_free_points_differ_and_do_not_move_when_other_lines_change() -> None:
    scene = execute(FREE).scene
    points = {(p.x, p.y) for p in scene.points().values()}
    assert len(points) == len(scene.points())
    edited = execute("# a new first line\npoint : 7 7 -> Z\n" + FREE).scene
    for label in ("A", "B", "C", "P", "Q"):
        assert edited.objects[label] == scene.objects[label]


def test_points_on_objects_lie_on_them() -> None:
    objects = execute(FREE).scene.objects
    s, c, line, ray, arc = (objects[k] for k in ("s", "c", "l", "r", "arc"))
    p, q, r, t, u = (objects[k] for k in ("P", "Q", "R", "S", "T"))
    assert isinstance(s, Segment) and isinstance(p, Point)
    assert math.isclose(s.a.distance(p) + p.distance(s.b), s.a.distance(s.b))
    assert isinstance(c, Circle) and isinstance(q, Point)
    assert math.isclose(c.center.distance(q), c.radius)
    assert isinstance(line, Line) and isinstance(r, Point)
    cross = (line.q.x - line.p.x) * (r.y - line.p.y) - (line.q.y - line.p.y) * (r.x - line.p.x)
    assert abs(cross) < 1e-6
    assert isinstance(ray, Ray) and isinstance(t, Point)
    dx, dy = ray.through.x - ray.origin.x, ray.through.y - ray.origin.y
    assert (t.x - ray.origin.x) * dx + (t.y - ray.origin.y) * dy > 0  # ahead of the origin
    assert isinstance(arc, Arc) and isinstance(u, Point)
    assert math.isclose(arc.center.distance(u), arc.radius)


def test_program_size_limit_boundary() -> None:
    limits = Limits(max_lines=3)
    assert execute("point : 0 0 -> A\npoint : 1 0 -> B\npoint : 2 0 -> C", limits).ok
    result = execute("point : 0 0 -> A\npoint : 1 0 -> B\npoint : 2 0 -> C\n# more", limits)
    assert result.error is not None
    assert (result.error.category, result.error.line) == ("limit", 4)
    assert result.scene.objects == {}


def test_computed_coordinates_are_bounded() -> None:
    # Two nearly parallel lines meet far away: the intersection breaks the magnitude limit.
    result = execute(
        "point : 0 0 -> A\npoint : 1 0 -> B\npoint : 0 1 -> C\n"
        "point : 1 1.0000001 -> D\nline : A B -> l1\nline : C D -> l2\n"
        "intersect : l1 l2 -> P"
    )
    assert result.error is not None
    assert (result.error.category, result.error.line) == ("limit", 7)
    assert "P" not in result.scene.objects


def test_geoqa_style_inscribed_quadrilateral_with_tangent_and_foot() -> None:
    # Problem 367 style: ABCD inscribed in circle O with angle AOC = 100 degrees; a tangent
    # at A, the perpendicular foot of C on AB, and bisector of angle ABC.
    source = """\
point : 0 0 -> O
point : 50 0 -> A
circle : O A -> c
rotate : A 100° O -> C
rotate : A 200° O -> D
rotate : A 40 O -> B
polygon : A B C D -> ABCD AB BC CD DA
angle : A O C -> aoc
tangent : A c -> tA
line : A B -> lAB
orthogonal_line : C lAB -> perp
intersect : perp lAB -> H
angular_bisector : A B C -> bis
midpoint : A C -> M
"""
    result = execute(source)
    assert result.ok, result.error
    objects = result.scene.objects
    aoc = objects["aoc"]
    assert math.isclose(math.degrees(aoc.value), 100)  # type: ignore[union-attr]
    h, c = objects["H"], objects["C"]
    a, b = objects["A"], objects["B"]
    assert isinstance(h, Point) and isinstance(c, Point) and isinstance(a, Point)
    assert isinstance(b, Point)
    # CH is perpendicular to AB.
    dot = (c.x - h.x) * (b.x - a.x) + (c.y - h.y) * (b.y - a.y)
    assert abs(dot) < 1e-9 * 50 * 50
