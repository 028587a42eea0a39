"""U-RLT-SLT special_lines: triangle ABC with segment BD, D on AC: median, altitude or bisector.

A pair is one triangle with two different labels whose D points are one grid step apart.
Both D lie on line AC, so AC must run along a grid axis. Lattice triangles where two of the
three feet (midpoint M, altitude foot H, bisector foot L) are lattice points one unit apart
are found once by exhaustive search with B above the origin and AC on the x-axis, then
varied by the 8 lattice symmetries and a random translation.

Measured catalogue (grid [-20, 20]): hundreds of median/altitude triangles, nine
median/bisector shapes (and mirrors), and a single altitude/bisector shape (A=(-3,0),
B=(0,3), C=(21,0) and its mirror): the bisector is rational only for Pythagorean-like side
ratios, and L lies strictly between H and M, so such pairs are rare on a 41-point grid.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from functools import cache

from geometry.exact import bisector_foot, foot_of_perpendicular, midpoint
from geometry.figure import Draw, Figure, IntPoint
from geometry.tasks.sampling import (
    LATTICE_SYMMETRIES,
    check_in_grid,
    check_spread,
    check_triangle,
    place,
    shift,
)
from geometry.thresholds import (
    GRID_MAX,
    GRID_MIN,
    MIN_ANGLE_DEG,
    SPECIAL_LINES_MIN_ANGLE_DEG,
    Degenerate,
    require,
)

OPTIONS: tuple[str, ...] = ("median", "altitude", "bisector")
# The catalogue's triangles fit the grid: B = (0, h) and A, C on the x-axis, all within a
# 41 x 41 box once translated.
_SPAN = GRID_MAX - GRID_MIN

Triangle = tuple[IntPoint, IntPoint, IntPoint]


def _lattice(p: tuple[Fraction | float, Fraction | float]) -> IntPoint | None:
    x, y = p
    if isinstance(x, Fraction) and isinstance(y, Fraction) and x.denominator == y.denominator == 1:
        return int(x), int(y)
    return None


def feet(a: IntPoint, b: IntPoint, c: IntPoint) -> dict[str, IntPoint | None]:
    """Where the median, altitude and bisector from B meet line AC (None: not a lattice point)."""
    return {
        "median": _lattice(midpoint(a, c)),
        "altitude": _lattice(foot_of_perpendicular(b, a, c)),
        "bisector": _lattice(bisector_foot(a, b, c)),
    }


def label_of(a: IntPoint, b: IntPoint, c: IntPoint, d: IntPoint) -> str:
    """Which special line BD is; `Degenerate` if D is none or more than one of the feet."""
    matches = [name for name, foot in feet(a, b, c).items() if foot == d]
    require(len(matches) == 1, f"D={d} is {matches or 'no special foot'}")
    return matches[0]


@cache
def _squarefree_part(n: int) -> int:
    """n without its square factors: sqrt(m)/sqrt(n) is rational iff the parts agree."""
    d = 2
    while d * d <= n:
        while n % (d * d) == 0:
            n //= d * d
        d += 1
    return n


def _min_angle(pair: frozenset[str]) -> float:
    # Lattice triangles whose altitude and bisector feet are one unit apart are all thin
    # (the flattest angle is 8.1 degrees), so that pair alone has a relaxed threshold.
    return SPECIAL_LINES_MIN_ANGLE_DEG if pair == {"altitude", "bisector"} else MIN_ANGLE_DEG


@cache
def catalogue() -> dict[frozenset[str], tuple[Triangle, ...]]:
    """Base triangles (A, B, C) per unordered label pair whose two feet are one step apart.

    A = (xa, 0), B = (0, h), C = (xc, 0): the altitude foot H is the origin, the bisector foot
    is rational only when BA / BC is, i.e. xa^2 + h^2 and xc^2 + h^2 share a square-free part.
    """
    found: dict[frozenset[str], list[Triangle]] = {}
    for h in range(2, _SPAN + 1):
        for xa in range(-_SPAN, _SPAN + 1):
            for xc in range(xa + 2, xa + _SPAN + 1):
                if max(xc, 0) - min(xa, 0) > _SPAN:
                    continue
                rational_bisector = _squarefree_part(xa * xa + h * h) == _squarefree_part(
                    xc * xc + h * h
                )
                median_altitude = xa < 0 < xc and abs(xa + xc) == 2
                if not (rational_bisector or median_altitude):
                    continue
                a, b, c = (xa, 0), (0, h), (xc, 0)
                foot = feet(a, b, c)
                for first, second in itertools.combinations(OPTIONS, 2):
                    f1, f2 = foot[first], foot[second]
                    if f1 is None or f2 is None or abs(f1[0] - f2[0]) != 1:
                        continue
                    pair = frozenset((first, second))
                    # The checks include the grid, so run them on a copy moved into it.
                    corner = (GRID_MIN - min(xa, 0), GRID_MIN)
                    moved = [shift(p, corner) for p in (a, b, c)]
                    try:
                        check_triangle(*moved, min_angle=_min_angle(pair))
                        for d in (f1, f2):
                            check_spread([a, b, c, d])
                    except Degenerate:
                        continue
                    found.setdefault(pair, []).append((a, b, c))
    return {pair: tuple(tris) for pair, tris in found.items()}


def special_lines(rng: random.Random, labels: tuple[str, str]) -> tuple[Draw, Draw]:
    """(Draw with BD the labels[0] line, Draw with BD the labels[1] line) of one triangle."""
    first, second = labels
    if first == second or not {first, second} <= set(OPTIONS):
        raise ValueError(f"special_lines needs two different labels of {OPTIONS}, got {labels}")
    base = rng.choice(catalogue()[frozenset(labels)])
    symmetry = rng.choice(LATTICE_SYMMETRIES)
    a, b, c = place(rng, [symmetry(p) for p in base])
    foot = feet(a, b, c)
    draws = []
    for label in labels:
        d = foot[label]
        assert d is not None  # the catalogue holds only triangles where both feet are lattice
        check_in_grid([d])
        points = {"A": a, "B": b, "C": c, "D": d}
        answer = label_of(a, b, c, d)
        require(answer == label, "label not reached")
        figure = Figure(polygons=(tuple("ABC"),), segments=(("B", "D"),))
        draws.append(Draw(points, answer, figure))
    return draws[0], draws[1]
