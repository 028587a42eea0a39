"""Every named tolerance and degeneracy threshold of the NoReGeo generators and grader.

Generators raise `Degenerate` when a draw violates one; a bounded, seeded loop
(`draw_until_valid`) redraws.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import TypeVar

# Grading (paper): a number or each point coordinate is right within +-0.5, inclusive.
ANSWER_TOLERANCE = Decimal("0.5")

# The coordinate grid every point lies on.
GRID_MIN = -20
GRID_MAX = 20

# Distinct labelled points are at least this far apart (grid units), so their labels and
# dots do not merge in a 224-pixel image.
MIN_POINT_DISTANCE = 2
# Sides of triangles and parallelograms, and segments asked about, are at least this long.
MIN_SIDE_LENGTH = 3
# Every angle of a triangle or parallelogram, and the angle between two intersecting lines,
# is at least this many degrees: slivers look like segments.
MIN_ANGLE_DEG = 15.0
# Triangles have at least this area (square grid units).
MIN_TRIANGLE_AREA = Fraction(4)
# special_lines altitude/bisector pairs only: the lattice triangles whose altitude and
# bisector feet are one grid step apart all have a flat angle (8.1 degrees at best).
SPECIAL_LINES_MIN_ANGLE_DEG = 8.0
# Area comparisons that are not "equal": larger / smaller is at least this, so the
# difference is there to be seen, not only computed.
MIN_AREA_RATIO = Fraction(5, 4)
# triangle_type: acute and obtuse triangles keep their largest angle this far from 90
# degrees, so "right" is the only label that needs a near-right angle.
RIGHT_ANGLE_MARGIN_DEG = 5.0
# Number answers must be expressible by the bounded number grammar (4 integer digits).
MAX_NUMBER_ANSWER = 9999
# A seeded generator gives up after this many rejected draws: a task whose constraints
# cannot be met must fail loudly, not loop forever.
MAX_DRAW_TRIES = 1000


class Degenerate(ValueError):
    """A draw violates a threshold above (or an exact construction has no answer)."""


def require(condition: bool, reason: str) -> None:
    """Raise `Degenerate(reason)` unless `condition` holds."""
    if not condition:
        raise Degenerate(reason)


def in_grid(value: Fraction | float | int) -> bool:
    """Whether a coordinate lies in [GRID_MIN, GRID_MAX].

    >>> in_grid(20), in_grid(Fraction(41, 2)), in_grid(-20.0)
    (True, False, True)
    """
    return GRID_MIN <= value <= GRID_MAX


T = TypeVar("T")


def draw_until_valid(
    make: Callable[[random.Random], T],
    rng: random.Random,
    *,
    task: str,
    max_tries: int = MAX_DRAW_TRIES,
) -> T:
    """Call `make(rng)` until it returns without raising `Degenerate`; at most `max_tries`.

    The same `rng` is reused, so the result is a deterministic function of its state.

    >>> rng = random.Random(0)
    >>> def dice(r: random.Random) -> int:
    ...     v = r.randint(1, 6)
    ...     require(v == 6, "not a six")
    ...     return v
    >>> draw_until_valid(dice, rng, task="demo")
    6
    >>> draw_until_valid(lambda r: require(False, "never"), rng, task="demo", max_tries=3)
    Traceback (most recent call last):
    RuntimeError: task demo: no valid draw in 3 tries; last rejection: never
    """
    last = "no tries made"
    for _ in range(max_tries):
        try:
            return make(rng)
        except Degenerate as err:
            last = str(err)
    raise RuntimeError(f"task {task}: no valid draw in {max_tries} tries; last rejection: {last}")
