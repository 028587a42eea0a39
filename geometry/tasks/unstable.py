"""Unstable (U-) yes/no generators, built in matched pairs.

Each task is a positive figure, an exact predicate and a validity check. The negative is the
positive with exactly one point moved one grid step (|dx| + |dy| == 1) such that the
predicate flips and the figure stays valid (`sampling.nudge_one_point`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from geometry.exact import (
    dist2,
    is_collinear,
    is_parallel,
    is_perpendicular,
    is_right_angle,
    midpoint,
    reflect,
)
from geometry.figure import Draw, Figure, IntPoint
from geometry.tasks.options import DEFAULT_OPTIONS, GeneratorOptions
from geometry.tasks.sampling import (
    check_in_grid,
    check_segment,
    check_spread,
    check_triangle,
    nudge_one_point,
    place,
    random_point,
    random_vector,
    right_angle_vectors,
    shift,
)
from geometry.thresholds import GRID_MAX, GRID_MIN, MIN_SIDE_LENGTH, require

Points = dict[str, IntPoint]

YES_NO: tuple[str, str] = ("yes", "no")


@dataclass(frozen=True)
class Positive:
    """A positive figure and what is needed to build its negative."""

    points: Points
    figure: Figure
    answer_of: Callable[[Points], str]
    check: Callable[[Points], None]
    params: dict[str, Any] = field(default_factory=dict)


def yes_no_pair(
    rng: random.Random, labels: tuple[str, str], positive: Positive
) -> tuple[Draw, Draw]:
    """(Draw labelled labels[0], Draw labelled labels[1]) from a positive and its nudge."""
    if sorted(labels) != sorted(YES_NO):
        raise ValueError(f"a yes/no pair needs labels ('yes', 'no'), got {labels}")
    positive.check(positive.points)
    require(positive.answer_of(positive.points) == "yes", "positive figure is not a yes")
    negative = nudge_one_point(rng, positive.points, positive.answer_of, positive.check)
    draws = {
        answer: Draw(points, answer, positive.figure, dict(positive.params))
        for answer, points in (("yes", positive.points), ("no", negative))
    }
    return draws[labels[0]], draws[labels[1]]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


@cache
def _integer_radius_vectors() -> tuple[tuple[IntPoint, int], ...]:
    """Lattice vectors (a, b) whose length r is an integer in [MIN_SIDE_LENGTH, 10]."""
    found = []
    for a in range(-10, 11):
        for b in range(-10, 11):
            r2 = a * a + b * b
            r = round(r2**0.5)
            if r * r == r2 and MIN_SIDE_LENGTH <= r <= 10:
                found.append(((a, b), r))
    return tuple(found)


def circle_diameter(rng: random.Random, labels: tuple[str, str]) -> tuple[Draw, Draw]:
    """Circle with centre O and radius params["radius"] (an integer): is AB a diameter,
    i.e. O is the midpoint of AB and |AB| = 2r."""
    (a, b), r = rng.choice(_integer_radius_vectors())
    o = random_point(rng, (GRID_MIN + r, GRID_MAX - r, GRID_MIN + r, GRID_MAX - r))
    points = {"O": o, "A": shift(o, (a, b)), "B": shift(o, (a, b), -1)}

    def answer_of(p: Points) -> str:
        return _yes(midpoint(p["A"], p["B"]) == p["O"] and dist2(p["A"], p["B"]) == 4 * r * r)

    def check(p: Points) -> None:
        check_in_grid(list(p.values()))
        check_spread(list(p.values()))

    figure = Figure(segments=(("A", "B"),), circles=(("O", float(r)),))
    return yes_no_pair(rng, labels, Positive(points, figure, answer_of, check, {"radius": r}))


def parallel_lines(rng: random.Random, labels: tuple[str, str]) -> tuple[Draw, Draw]:
    """Are lines AB and CD parallel (two distinct lines)."""
    direction = random_vector(rng, 8)
    a, c = random_point(rng), random_point(rng)
    d = shift(c, direction, rng.choice((1, -1)))
    points = {"A": a, "B": shift(a, direction), "C": c, "D": d}

    def answer_of(p: Points) -> str:
        return _yes(is_parallel(p["A"], p["B"], p["C"], p["D"]))

    def check(p: Points) -> None:
        check_in_grid(list(p.values()))
        check_spread(list(p.values()))
        check_segment(p["A"], p["B"])
        check_segment(p["C"], p["D"])
        require(not is_collinear(*p.values()), "the two lines coincide")

    figure = Figure(lines=(("A", "B"), ("C", "D")))
    return yes_no_pair(rng, labels, Positive(points, figure, answer_of, check))


def _check_two_segments(p: Points) -> None:
    check_in_grid(list(p.values()))
    check_spread(list(p.values()))
    check_segment(p["A"], p["B"])
    check_segment(p["C"], p["D"])


def perpendicular(rng: random.Random, labels: tuple[str, str]) -> tuple[Draw, Draw]:
    """Are segments AB and CD perpendicular (as directions; they need not meet)."""
    u, v = right_angle_vectors(rng, reach=10)
    a, c = random_point(rng), random_point(rng)
    points = {"A": a, "B": shift(a, u), "C": c, "D": shift(c, v)}

    def answer_of(p: Points) -> str:
        return _yes(is_perpendicular(p["A"], p["B"], p["C"], p["D"]))

    figure = Figure(segments=(("A", "B"), ("C", "D")))
    return yes_no_pair(rng, labels, Positive(points, figure, answer_of, _check_two_segments))


def _check_abc(p: Points) -> None:
    check_triangle(p["A"], p["B"], p["C"])


def right_angle(rng: random.Random, labels: tuple[str, str]) -> tuple[Draw, Draw]:
    """Is angle ABC (at B) a right angle."""
    u, v = right_angle_vectors(rng)
    a, b, c = place(rng, [u, (0, 0), v])
    points = {"A": a, "B": b, "C": c}

    def answer_of(p: Points) -> str:
        return _yes(is_right_angle(p["A"], p["B"], p["C"]))

    figure = Figure(segments=(("B", "A"), ("B", "C")))
    return yes_no_pair(rng, labels, Positive(points, figure, answer_of, _check_abc))


def _check_semicircle(p: Points) -> None:
    check_triangle(p["A"], p["B"], p["C"])
    # The paper's question names no diameter: a right angle at A or B would make a "no"
    # figure inscribed in the semicircle on BC or AC. Positives never have one (C is right).
    require(
        not is_right_angle(p["B"], p["A"], p["C"]) and not is_right_angle(p["A"], p["B"], p["C"]),
        "right angle at A or B",
    )


def semicircle_triangle(
    rng: random.Random, labels: tuple[str, str], options: GeneratorOptions = DEFAULT_OPTIONS
) -> tuple[Draw, Draw]:
    """Is triangle ABC inscribed in a semicircle, i.e. C on the circle with diameter AB
    (Thales: angle ACB is right); no figure has a right angle at A or B, so the answer is
    the same whether or not the question names AB as the diameter. The full image draws
    the triangle and (`semicircle_figure="arc"`) the semicircle on AB on C's side."""
    u, v = right_angle_vectors(rng)
    a, b, c = place(rng, [u, v, (0, 0)])
    points = {"A": a, "B": b, "C": c}

    def answer_of(p: Points) -> str:
        return _yes(is_right_angle(p["A"], p["C"], p["B"]))

    arc = (("A", "B", "C"),) if options.semicircle_figure == "arc" else ()
    figure = Figure(polygons=(tuple("ABC"),), semicircles=arc)
    return yes_no_pair(rng, labels, Positive(points, figure, answer_of, _check_semicircle))


def symmetry(rng: random.Random, labels: tuple[str, str]) -> tuple[Draw, Draw]:
    """Are P and Q symmetric about the line params["line"] == "y=x"."""
    p = random_point(rng)
    points = {"P": p, "Q": (p[1], p[0])}

    def answer_of(pts: Points) -> str:
        return _yes(reflect(pts["P"], "y=x") == pts["Q"])

    def check(pts: Points) -> None:
        check_in_grid(list(pts.values()))
        check_spread(list(pts.values()))

    figure = Figure(axes=("y=x",))
    return yes_no_pair(rng, labels, Positive(points, figure, answer_of, check, {"line": "y=x"}))
