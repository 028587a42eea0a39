"""Shared pieces of the task generators: random lattice points and shapes, threshold checks,
placement in a box, and the one-step nudge that turns a positive U-task figure into its
negative.

Every function here raises `Degenerate` for a draw that breaks a named threshold; the
redraw loop lives in `geometry.thresholds.draw_until_valid`.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence

from geometry.exact import (
    dist2,
    is_collinear,
    min_angle_deg,
    triangle_area,
)
from geometry.figure import IntPoint, Number
from geometry.thresholds import (
    GRID_MAX,
    GRID_MIN,
    MAX_NUMBER_ANSWER,
    MIN_ANGLE_DEG,
    MIN_POINT_DISTANCE,
    MIN_SIDE_LENGTH,
    MIN_TRIANGLE_AREA,
    Degenerate,
    in_grid,
    require,
)

Box = tuple[int, int, int, int]  # x_min, x_max, y_min, y_max (inclusive)
GRID_BOX: Box = (GRID_MIN, GRID_MAX, GRID_MIN, GRID_MAX)
UNIT_STEPS: tuple[IntPoint, ...] = ((1, 0), (-1, 0), (0, 1), (0, -1))
# The 8 symmetries of the square lattice fixing the origin, as (x, y) -> (x', y').
LATTICE_SYMMETRIES: tuple[Callable[[IntPoint], IntPoint], ...] = (
    lambda p: (p[0], p[1]),
    lambda p: (-p[1], p[0]),
    lambda p: (-p[0], -p[1]),
    lambda p: (p[1], -p[0]),
    lambda p: (p[0], -p[1]),
    lambda p: (-p[0], p[1]),
    lambda p: (p[1], p[0]),
    lambda p: (-p[1], -p[0]),
)


def random_point(rng: random.Random, box: Box = GRID_BOX) -> IntPoint:
    """A uniform lattice point of `box`."""
    return rng.randint(box[0], box[1]), rng.randint(box[2], box[3])


def random_vector(rng: random.Random, max_component: int) -> IntPoint:
    """A non-zero lattice vector with both components in [-max_component, max_component]."""
    while True:  # terminates: only 1 of (2m+1)^2 vectors is rejected
        v = rng.randint(-max_component, max_component), rng.randint(-max_component, max_component)
        if v != (0, 0):
            return v


def primitive(v: IntPoint) -> IntPoint:
    """`v` divided by the gcd of its components: the shortest lattice step along it."""
    g = math.gcd(v[0], v[1])
    return v[0] // g, v[1] // g


def shift(p: IntPoint, v: IntPoint, times: int = 1) -> IntPoint:
    """p + times * v."""
    return p[0] + times * v[0], p[1] + times * v[1]


def place(rng: random.Random, offsets: Sequence[IntPoint], box: Box = GRID_BOX) -> list[IntPoint]:
    """Translate a shape (lattice offsets) to a uniformly chosen position inside `box`."""
    xs = [p[0] for p in offsets]
    ys = [p[1] for p in offsets]
    lo_x, hi_x = box[0] - min(xs), box[1] - max(xs)
    lo_y, hi_y = box[2] - min(ys), box[3] - max(ys)
    require(lo_x <= hi_x and lo_y <= hi_y, "shape does not fit its box")
    tx, ty = rng.randint(lo_x, hi_x), rng.randint(lo_y, hi_y)
    return [(x + tx, y + ty) for x, y in offsets]


def check_in_grid(points: Sequence[IntPoint]) -> None:
    """Every point lies on the grid."""
    require(all(in_grid(x) and in_grid(y) for x, y in points), "point outside the grid")


def check_spread(points: Sequence[IntPoint]) -> None:
    """Distinct labelled points are at least MIN_POINT_DISTANCE apart."""
    for p, q in itertools.combinations(points, 2):
        require(dist2(p, q) >= MIN_POINT_DISTANCE**2, f"points {p} and {q} too close")


def check_segment(a: IntPoint, b: IntPoint) -> None:
    """A segment asked about or drawn is at least MIN_SIDE_LENGTH long."""
    require(dist2(a, b) >= MIN_SIDE_LENGTH**2, f"segment {a}-{b} too short")


def check_polygon(pts: Sequence[IntPoint], min_angle: float = MIN_ANGLE_DEG) -> None:
    """Grid, spread, side lengths, no angle under `min_angle`, no straight vertices."""
    check_in_grid(pts)
    check_spread(pts)
    n = len(pts)
    for i in range(n):
        check_segment(pts[i], pts[(i + 1) % n])
        require(not is_collinear(pts[i - 1], pts[i], pts[(i + 1) % n]), "straight vertex")
    require(min_angle_deg(pts) >= min_angle, "sliver angle")


def check_triangle(
    a: IntPoint, b: IntPoint, c: IntPoint, *, min_angle: float = MIN_ANGLE_DEG
) -> None:
    """A drawable triangle: polygon checks plus MIN_TRIANGLE_AREA."""
    require(not is_collinear(a, b, c), "collinear triangle")
    check_polygon([a, b, c], min_angle)
    require(triangle_area(a, b, c) >= MIN_TRIANGLE_AREA, "triangle too small")


def check_point_answer(p: tuple[Number, Number]) -> None:
    """A point answer lies on the grid, so the answer grammar and the image can hold it."""
    require(in_grid(p[0]) and in_grid(p[1]), f"answer point {p} outside the grid")


def check_number_answer(v: Number) -> None:
    """A number answer is positive and fits the bounded number grammar."""
    require(0 < v <= MAX_NUMBER_ANSWER, f"answer {v} outside (0, {MAX_NUMBER_ANSWER}]")


def random_triangle(rng: random.Random, box: Box = GRID_BOX) -> list[IntPoint]:
    """Three uniform lattice points of `box` that pass `check_triangle`."""
    pts = [random_point(rng, box) for _ in range(3)]
    check_triangle(*pts)
    return pts


def random_parallelogram(
    rng: random.Random, box: Box = GRID_BOX, reach: int = 12
) -> list[IntPoint]:
    """ABCD = A, A+u, A+u+v, A+v with |components| <= reach, placed in `box`."""
    u, v = random_vector(rng, reach), random_vector(rng, reach)
    pts = place(rng, [(0, 0), u, shift(u, v), v], box)
    check_polygon(pts)
    return pts


def right_angle_vectors(rng: random.Random, reach: int = 12) -> tuple[IntPoint, IntPoint]:
    """Two lattice vectors u, v with u . v == 0, both at least MIN_SIDE_LENGTH long."""
    u = random_vector(rng, reach)
    step = primitive((-u[1], u[0]))
    v = shift((0, 0), step, rng.choice([k for k in range(-reach, reach + 1) if k]))
    require(max(abs(v[0]), abs(v[1])) <= reach, "perpendicular leg too long")
    for w in (u, v):
        require(dist2((0, 0), w) >= MIN_SIDE_LENGTH**2, "leg too short")
    return u, v


def nudge_one_point(
    rng: random.Random,
    points: dict[str, IntPoint],
    answer_of: Callable[[dict[str, IntPoint]], str],
    check: Callable[[dict[str, IntPoint]], None],
) -> dict[str, IntPoint]:
    """`points` with exactly one point moved one grid step, so that the answer changes.

    Moves are tried in a seeded random order; a move must keep the figure on the grid and
    pass `check`. Raises `Degenerate` when no move flips the answer.
    """
    before = answer_of(points)
    moves = [(label, step) for label in points for step in UNIT_STEPS]
    rng.shuffle(moves)
    for label, step in moves:
        moved = dict(points)
        moved[label] = shift(points[label], step)
        if not (in_grid(moved[label][0]) and in_grid(moved[label][1])):
            continue
        try:
            check(moved)
        except Degenerate:
            continue
        if answer_of(moved) != before:
            return moved
    raise Degenerate("no one-step move changes the answer")
