"""geometry.exact: doctests, and exact results checked against their defining properties."""

from __future__ import annotations

import doctest
import math
import random
from fractions import Fraction
from typing import Any

import pytest

import geometry.answers
import geometry.exact
import geometry.figure
import geometry.items
import geometry.prompts
import geometry.thresholds
from geometry.exact import (
    AXES,
    bisector_foot,
    circumcenter,
    dist2,
    foot_of_perpendicular,
    incenter,
    inradius,
    is_collinear,
    is_simple_polygon,
    is_symmetric_about_y_axis,
    line_intersection,
    perimeter,
    polygon_area,
    reflect,
    rotate,
    triangle_type,
)
from geometry.thresholds import Degenerate

AnyPoint = tuple[Any, Any]  # int, Fraction or float coordinates


@pytest.mark.parametrize(
    "module",
    [
        geometry.exact,
        geometry.answers,
        geometry.figure,
        geometry.thresholds,
        geometry.items,
        geometry.prompts,
    ],
)
def test_doctests(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.failed == 0


def _triangles(n: int, seed: int = 7) -> list[tuple[tuple[int, int], ...]]:
    rng = random.Random(seed)
    out: list[tuple[tuple[int, int], ...]] = []
    while len(out) < n:
        pts = tuple((rng.randint(-20, 20), rng.randint(-20, 20)) for _ in range(3))
        if not is_collinear(*pts):
            out.append(pts)
    return out


def _fdist(p: AnyPoint, q: AnyPoint) -> float:
    return math.hypot(float(p[0]) - float(q[0]), float(p[1]) - float(q[1]))


def _line_distance(p: AnyPoint, a: tuple[int, int], b: tuple[int, int]) -> float:
    cross = (b[0] - a[0]) * (float(p[1]) - a[1]) - (b[1] - a[1]) * (float(p[0]) - a[0])
    return abs(cross) / math.hypot(b[0] - a[0], b[1] - a[1])


@pytest.mark.parametrize("tri", _triangles(60))
def test_triangle_centres_meet_their_definitions(tri: tuple[tuple[int, int], ...]) -> None:
    a, b, c = tri
    o = circumcenter(a, b, c)
    assert dist2(o, a) == dist2(o, b) == dist2(o, c)  # exact
    i, r = incenter(a, b, c), inradius(a, b, c)
    for p, q in ((a, b), (b, c), (c, a)):
        assert math.isclose(_line_distance(i, p, q), float(r), rel_tol=1e-9, abs_tol=1e-9)
    d = bisector_foot(a, b, c)
    assert math.isclose(_fdist(d, a) / _fdist(d, c), _fdist(b, a) / _fdist(b, c), rel_tol=1e-9)
    # the foot lies on AC
    assert _line_distance(d, a, c) < 1e-9


@pytest.mark.parametrize("tri", _triangles(60, seed=8))
def test_triangle_type_matches_float_angles(tri: tuple[tuple[int, int], ...]) -> None:
    sides = sorted(math.dist(tri[i], tri[(i + 1) % 3]) for i in range(3))
    largest = math.degrees(
        math.acos((sides[0] ** 2 + sides[1] ** 2 - sides[2] ** 2) / (2 * sides[0] * sides[1]))
    )
    expected = "right" if abs(largest - 90) < 1e-7 else ("acute" if largest < 90 else "obtuse")
    assert triangle_type(*tri) == expected


def test_right_triangle_is_right_exactly_even_when_floats_blur() -> None:
    # legs (1, 7) and (-7, 1): 90 degrees exactly; a tilted copy nearby is not
    assert triangle_type((0, 0), (1, 7), (-7, 1)) == "right"
    assert triangle_type((0, 0), (1, 7), (-7, 2)) == "acute"


def test_degenerate_triangles_raise() -> None:
    for fn in (circumcenter, incenter, inradius, bisector_foot, triangle_type):
        with pytest.raises(Degenerate):
            fn((0, 0), (2, 2), (5, 5))
        with pytest.raises(Degenerate):
            fn((1, 1), (1, 1), (4, 0))


def test_line_intersection_lies_on_both_lines_and_parallels_give_none() -> None:
    rng = random.Random(3)
    for _ in range(200):
        a, b, c, d = ((rng.randint(-20, 20), rng.randint(-20, 20)) for _ in range(4))
        if a == b or c == d:
            continue
        p = line_intersection(a, b, c, d)
        if p is None:
            assert (b[0] - a[0]) * (d[1] - c[1]) == (b[1] - a[1]) * (d[0] - c[0])
        else:
            assert is_collinear(a, b, p) and is_collinear(c, d, p)
    assert line_intersection((0, 0), (1, 1), (2, 2), (5, 5)) is None  # same line


def test_foot_of_perpendicular_is_closest_point() -> None:
    f = foot_of_perpendicular((3, 7), (-4, 1), (6, -2))
    assert _line_distance(f, (-4, 1), (6, -2)) == 0 or _line_distance(f, (-4, 1), (6, -2)) < 1e-12
    assert math.isclose(_fdist(f, (3, 7)), _line_distance((3, 7), (-4, 1), (6, -2)))


def test_reflections_are_involutions_and_rotations_cycle() -> None:
    p = (Fraction(3), Fraction(-5))
    for axis in AXES:
        assert reflect(reflect(p, axis), axis) == p
        assert dist2(reflect(p, axis), (0, 0)) == dist2(p, (0, 0))
    assert rotate(rotate(p, 90), 270) == p
    assert rotate(p, 180) == (-p[0], -p[1])
    with pytest.raises(ValueError, match="axis"):
        reflect(p, "z")


def test_polygon_area_and_perimeter() -> None:
    square = [(0, 0), (3, 0), (3, 3), (0, 3)]
    assert polygon_area(square) == 9 and polygon_area(square[::-1]) == 9
    assert perimeter(square) == 12 and isinstance(perimeter(square), Fraction)
    assert math.isclose(perimeter([(0, 0), (1, 1), (0, 2)]), 2 + 2 * math.sqrt(2))


def test_polygon_predicates() -> None:
    assert not is_simple_polygon([(0, 0), (2, 0), (4, 0)])  # flat
    assert not is_simple_polygon([(0, 0), (4, 0), (2, 0), (2, 3)])  # folds back on itself
    kite = [(0, 4), (3, 0), (0, -2), (-3, 0)]
    assert is_symmetric_about_y_axis(kite) and is_symmetric_about_y_axis(kite[::-1])
    assert not is_symmetric_about_y_axis([(x + 1, y) for x, y in kite])  # symmetric about x=1
