"""Numeric (N-) generators on points, segments, polygons and grid transformations.

Numeric tasks take no label (`label` is None). Answers are exact Fractions where rational;
lengths and perimeters are floats when irrational (see `geometry.exact.exact_sqrt`).
"""

from __future__ import annotations

import random

from geometry import exact
from geometry.exact import (
    length,
    line_angle_deg,
    line_intersection,
    perimeter,
    polygon_area,
    reflect,
    rotate,
)
from geometry.figure import Draw, Figure
from geometry.tasks.options import (
    DEFAULT_OPTIONS,
    REFLECTION_AXES,
    ROTATION_ANGLES,
    GeneratorOptions,
)
from geometry.tasks.sampling import (
    check_number_answer,
    check_point_answer,
    check_segment,
    check_spread,
    random_parallelogram,
    random_point,
    random_triangle,
)
from geometry.thresholds import MIN_ANGLE_DEG, require

_ABCD = Figure(polygons=(tuple("ABCD"),))
_ABC = Figure(polygons=(tuple("ABC"),))


def _segment_ab(rng: random.Random) -> dict[str, tuple[int, int]]:
    a, b = random_point(rng), random_point(rng)
    check_segment(a, b)
    return {"A": a, "B": b}


def midpoint(rng: random.Random, label: str | None) -> Draw:
    """Midpoint of AB."""
    points = _segment_ab(rng)
    answer = exact.midpoint(points["A"], points["B"])
    return Draw(points, answer, Figure(segments=(("A", "B"),)))


def parallelogram_area(rng: random.Random, label: str | None) -> Draw:
    """Area of parallelogram ABCD."""
    pts = random_parallelogram(rng)
    answer = polygon_area(pts)
    check_number_answer(answer)
    return Draw(dict(zip("ABCD", pts, strict=True)), answer, _ABCD)


def parallelogram_perim(rng: random.Random, label: str | None) -> Draw:
    """Perimeter of parallelogram ABCD (float when a side is irrational)."""
    pts = random_parallelogram(rng)
    answer = perimeter(pts)
    check_number_answer(answer)
    return Draw(dict(zip("ABCD", pts, strict=True)), answer, _ABCD)


def triangle_area(rng: random.Random, label: str | None) -> Draw:
    """Area of triangle ABC."""
    pts = random_triangle(rng)
    answer = exact.triangle_area(*pts)
    check_number_answer(answer)
    return Draw(dict(zip("ABC", pts, strict=True)), answer, _ABC)


def triangle_perim(rng: random.Random, label: str | None) -> Draw:
    """Perimeter of triangle ABC (float when a side is irrational)."""
    pts = random_triangle(rng)
    answer = perimeter(pts)
    check_number_answer(answer)
    return Draw(dict(zip("ABC", pts, strict=True)), answer, _ABC)


def intersection(rng: random.Random, label: str | None) -> Draw:
    """Where lines AB and CD meet; the lines cross at MIN_ANGLE_DEG or more, on the grid."""
    a, b, c, d = (random_point(rng) for _ in range(4))
    check_spread([a, b, c, d])
    check_segment(a, b)
    check_segment(c, d)
    require(line_angle_deg(a, b, c, d) >= MIN_ANGLE_DEG, "lines nearly parallel")
    answer = line_intersection(a, b, c, d)
    assert answer is not None  # the angle check above rules out parallel lines
    check_point_answer(answer)
    figure = Figure(lines=(("A", "B"), ("C", "D")))
    return Draw({"A": a, "B": b, "C": c, "D": d}, answer, figure)


def segment_length(rng: random.Random, label: str | None) -> Draw:
    """Length of AB (float when irrational)."""
    points = _segment_ab(rng)
    answer = length(points["A"], points["B"])
    return Draw(points, answer, Figure(segments=(("A", "B"),)))


def reflection(
    rng: random.Random, label: str | None, options: GeneratorOptions = DEFAULT_OPTIONS
) -> Draw:
    """Image of P across params["axis"]: "x" (the paper's) or, with `extended` variants, one
    of "x", "y", "y=x", "y=-x"; P is not on the axis."""
    axis = rng.choice(REFLECTION_AXES[options.variants])
    p = random_point(rng)
    answer = reflect(p, axis)
    require(answer != p, "P lies on the axis")
    return Draw({"P": p}, answer, Figure(axes=(axis,)), {"axis": axis})


def rotation_point(
    rng: random.Random, label: str | None, options: GeneratorOptions = DEFAULT_OPTIONS
) -> Draw:
    """Image of P rotated about the origin by params["angle"] degrees counter-clockwise: 90
    (the paper's) or, with `extended` variants, 90, 180 or 270; P is not the origin. The
    full figure marks the origin, draws OP and the arc of the turn (never P's image)."""
    angle = rng.choice(ROTATION_ANGLES[options.variants])
    p = random_point(rng)
    require(p != (0, 0), "P is the origin")
    return Draw({"P": p}, rotate(p, angle), Figure(rotations=(("P", angle),)), {"angle": angle})
