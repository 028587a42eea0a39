"""Classification (C-) generators: area comparison, collinearity, shape symmetry.

Each takes the label the item must have and builds a figure with exactly that answer,
recomputed exactly from the final coordinates (never assumed from the construction).
"""

from __future__ import annotations

import random
from fractions import Fraction

from geometry.exact import (
    dist2,
    is_collinear,
    is_simple_polygon,
    is_symmetric_about_y_axis,
    polygon_area,
    triangle_area,
)
from geometry.figure import Draw, Figure, IntPoint
from geometry.tasks.sampling import (
    GRID_BOX,
    Box,
    check_in_grid,
    check_polygon,
    check_spread,
    check_triangle,
    place,
    primitive,
    random_vector,
    shift,
)
from geometry.thresholds import (
    GRID_MAX,
    GRID_MIN,
    MIN_AREA_RATIO,
    MIN_SIDE_LENGTH,
    MIN_TRIANGLE_AREA,
    require,
)

# Two figures are compared side by side: each gets one half of the grid, split at random
# along x or y, with a one-unit gap so they never touch.
_HALVES: tuple[tuple[Box, Box], ...] = (
    ((GRID_MIN, -1, GRID_MIN, GRID_MAX), (1, GRID_MAX, GRID_MIN, GRID_MAX)),
    ((GRID_MIN, GRID_MAX, GRID_MIN, -1), (GRID_MIN, GRID_MAX, 1, GRID_MAX)),
)
# Shears of the lattice (determinant 1): they keep area and change the shape, so an
# "equal" pair is not two copies of one figure.
_SHEARS = ((1, 1, 0, 1), (1, -1, 0, 1), (1, 0, 1, 1), (1, 0, -1, 1), (1, 2, 0, 1), (1, 0, -2, 1))


def _shear(v: IntPoint, m: tuple[int, int, int, int]) -> IntPoint:
    return m[0] * v[0] + m[1] * v[1], m[2] * v[0] + m[3] * v[1]


def _compare(first: str, second: str, area1: Fraction, area2: Fraction) -> str:
    if area1 == area2:
        return "equal"
    return first if area1 > area2 else second


def _shape_pair(
    rng: random.Random, label: str, names: tuple[str, str], corners: int
) -> tuple[list[IntPoint], list[IntPoint]]:
    """Two shapes (as edge vectors from a corner) whose area comparison gives `label`."""

    def shape() -> list[IntPoint]:
        u, v = random_vector(rng, 9), random_vector(rng, 9)
        return [(0, 0), u, shift(u, v), v] if corners == 4 else [(0, 0), u, v]

    first = shape()
    if label == "equal":
        m = rng.choice(_SHEARS)
        second = [_shear(p, m) for p in first]
        require(
            sorted(dist2(first[i - 1], first[i]) for i in range(corners))
            != sorted(dist2(second[i - 1], second[i]) for i in range(corners)),
            "equal-area shapes are congruent",
        )
        return first, second
    second = shape()
    small, large = sorted((first, second), key=polygon_area)
    require(polygon_area(small) > 0, "flat shape")
    require(polygon_area(large) >= MIN_AREA_RATIO * polygon_area(small), "areas too close")
    return (large, small) if label == names[0] else (small, large)


def _placed_pair(
    rng: random.Random, label: str, names: tuple[str, str], corners: int
) -> tuple[list[IntPoint], list[IntPoint]]:
    shape1, shape2 = _shape_pair(rng, label, names, corners)
    box1, box2 = rng.choice(_HALVES)
    if rng.random() < 0.5:
        box1, box2 = box2, box1
    return place(rng, shape1, box1), place(rng, shape2, box2)


def parallelogram_size(rng: random.Random, label: str | None) -> Draw:
    """Parallelograms ABCD and EFGH in two halves of the grid; which has the larger area."""
    assert label is not None
    abcd, efgh = _placed_pair(rng, label, ("ABCD", "EFGH"), 4)
    for shape in (abcd, efgh):
        check_polygon(shape)
    answer = _compare("ABCD", "EFGH", polygon_area(abcd), polygon_area(efgh))
    require(answer == label, "label not reached")
    points = dict(zip("ABCDEFGH", abcd + efgh, strict=True))
    return Draw(points, answer, Figure(polygons=(tuple("ABCD"), tuple("EFGH"))))


def triangle_size(rng: random.Random, label: str | None) -> Draw:
    """Triangles ABC and DEF in two halves of the grid; which has the larger area."""
    assert label is not None
    abc, def_ = _placed_pair(rng, label, ("ABC", "DEF"), 3)
    for tri in (abc, def_):
        check_triangle(*tri)
    answer = _compare("ABC", "DEF", triangle_area(*abc), triangle_area(*def_))
    require(answer == label, "label not reached")
    points = dict(zip("ABCDEF", abc + def_, strict=True))
    return Draw(points, answer, Figure(polygons=(tuple("ABC"), tuple("DEF"))))


def collinearity(rng: random.Random, label: str | None) -> Draw:
    """Are A, B, C collinear. "no" figures are near misses: one point of a line moved off it
    by 1-3 units per axis, yet the triangle keeps MIN_TRIANGLE_AREA."""
    direction = primitive(random_vector(rng, 5))
    steps = rng.sample(range(-12, 13), 3)
    offsets = [shift((0, 0), direction, t) for t in steps]
    pts = place(rng, offsets, GRID_BOX)
    check_spread(pts)
    require(
        max(dist2(p, q) for p in pts for q in pts) >= (2 * MIN_SIDE_LENGTH) ** 2, "line too short"
    )
    if label == "no":
        i = rng.randrange(3)
        pts[i] = shift(pts[i], (rng.randint(-3, 3), rng.randint(-3, 3)))
        check_in_grid(pts)
        check_spread(pts)
        require(triangle_area(*pts) >= MIN_TRIANGLE_AREA, "near miss too close to the line")
    answer = "yes" if is_collinear(*pts) else "no"
    require(answer == label, "label not reached")
    figure = Figure(segments=(("A", "B"), ("B", "C")))
    return Draw(dict(zip("ABC", pts, strict=True)), answer, figure)


def _symmetric_polygon(rng: random.Random) -> list[IntPoint]:
    """A simple polygon of 4-6 vertices, symmetric about the y-axis (y-monotone halves)."""
    n = rng.choice((4, 5, 6))
    on_axis = 1 if n == 5 else rng.choice((0, 2))
    half = (n - on_axis) // 2
    ys = sorted(rng.sample(range(-15, 16), half + on_axis), reverse=True)
    top = ys.pop(0) if on_axis == 2 or (on_axis == 1 and rng.random() < 0.5) else None
    bottom = ys.pop() if on_axis == 2 or (on_axis == 1 and top is None) else None
    right = [(rng.randint(1, 14), y) for y in ys]  # y strictly decreasing
    left = [(-x, y) for x, y in reversed(right)]
    cycle = ([(0, top)] if top is not None else []) + right
    cycle += ([(0, bottom)] if bottom is not None else []) + left
    start = rng.randrange(n)
    cycle = cycle[start:] + cycle[:start]
    return cycle[::-1] if rng.random() < 0.5 else cycle


def shape_symmetry(rng: random.Random, label: str | None) -> Draw:
    """Is polygon ABC... symmetric about the y-axis. "no" polygons are a symmetric one with
    one vertex moved by 1-2 units, checked exactly to have lost the symmetry."""
    pts = _symmetric_polygon(rng)
    if label == "no":
        i = rng.randrange(len(pts))
        dx, dy = rng.choice(
            [
                (dx, dy)
                for dx in (-2, -1, 0, 1, 2)
                for dy in (-2, -1, 0, 1, 2)
                if 0 < abs(dx) + abs(dy) <= 2
            ]
        )
        pts[i] = shift(pts[i], (dx, dy))
    check_polygon(pts)
    require(is_simple_polygon(pts), "self-intersecting polygon")
    answer = "yes" if is_symmetric_about_y_axis(pts) else "no"
    require(answer == label, "label not reached")
    labels = "ABCDEF"[: len(pts)]
    return Draw(dict(zip(labels, pts, strict=True)), answer, Figure(polygons=(tuple(labels),)))
