"""Every tolerance of the GeoBuild executor and validator, relative to the figure's size.

A program may place points by rounded coordinates ("point : 3.46 2"), so the validator
accepts errors that are small against the figure, and the same check holds whether the
figure is 1 or 1000 units wide.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from geometry.dsl.scene import Point

# Executor: below this (relative to the scale of the inputs) two points coincide, two lines
# are parallel, a radius is zero: the construction is reported as geometrically invalid.
DEGENERATE_REL = 1e-9
# Validator: lengths and incidences agree within this fraction of the figure's size.
LENGTH_REL = 1e-3
# Validator: angles agree within this many degrees.
ANGLE_DEG = 0.5
# Validator: ratios (lengths, areas) agree within this relative error.
RATIO_REL = 1e-3
# Smallest scale used, so figures of one point or coincident points do not divide by zero.
MIN_SCALE = 1.0


def figure_scale(points: Iterable[Point]) -> float:
    """The figure's size: the diagonal of the points' bounding box (at least MIN_SCALE)."""
    pts = list(points)
    if not pts:
        return MIN_SCALE
    xs = [p.x for p in pts]
    ys = [p.y for p in pts]
    return max(math.hypot(max(xs) - min(xs), max(ys) - min(ys)), MIN_SCALE)


def lengths_close(a: float, b: float, scale: float) -> bool:
    """Whether lengths `a` and `b` agree within LENGTH_REL of the figure's `scale`."""
    return abs(a - b) <= LENGTH_REL * scale


def angles_close(a_deg: float, b_deg: float) -> bool:
    """Whether two angles in degrees agree within ANGLE_DEG."""
    return abs(a_deg - b_deg) <= ANGLE_DEG


def ratio_close(a: float, b: float) -> bool:
    """Whether `a` and `b` agree within RATIO_REL relative error (of the larger magnitude)."""
    return abs(a - b) <= RATIO_REL * max(abs(a), abs(b), 1e-12)


# Executor: a line or circle that misses touching a circle by less than this fraction of the
# radius touches it (one intersection point), so tangents computed in floats still meet.
TOUCH_REL = 1e-6
