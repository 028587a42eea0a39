"""The solver's unknowns: labelled points, auxiliary points and scalars, and circles.

`Space` is filled while residuals are built (each builder asks it for the points, lines and
circles a condition names, and it allocates the unknowns those need); `State` is the view of
one candidate vector `x` that residual functions read coordinates from. The vector helpers
and the residual pieces several builders share (not_collinear, on_line, sin/cos between
lines) live here too.

Unknowns beyond the problem's own points, and why they exist:
- a line named by a letter (`l`) gets two anchor points, since the program must draw it;
- a circle centred at O that no required object defines gets a radius unknown (the checks of
  point_on_circle, tangent, diameter need a drawn circle at O);
- concyclic points get a centre, a transformation of unknown angle gets the angle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from geometry.dsl.conditions.model import Condition, LineRef

Vec = tuple[float, float]
# What fixes a circle's radius: a point on it, a given length, or a radius unknown.
Radius = tuple[str, str | float]

# Separation and inequality margins as fractions of the figure's scale: far above the
# validator's LENGTH_REL (1e-3 of the figure's diagonal), so a solution with them is judged
# the same way by the checks.
MARGIN = 0.03
# Residual functions take the state and return their residuals.
ResidualFn = Callable[["State"], list[float]]


def sub(a: Vec, b: Vec) -> Vec:
    """The vector a - b."""
    return (a[0] - b[0], a[1] - b[1])


def dot(a: Vec, b: Vec) -> float:
    """The dot product of a and b."""
    return a[0] * b[0] + a[1] * b[1]


def cross(o: Vec, a: Vec, b: Vec) -> float:
    """z of (a - o) x (b - o)."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def dist(a: Vec, b: Vec) -> float:
    """The distance between points a and b."""
    return math.hypot(a[0] - b[0], a[1] - b[1])


def unit(v: Vec) -> Vec:
    """v scaled to length 1 (a zero vector stays zero rather than dividing by zero)."""
    n = math.hypot(*v)
    return (v[0] / n, v[1] / n) if n > 0.0 else (0.0, 0.0)


def mid(a: Vec, b: Vec) -> Vec:
    """The midpoint of a and b."""
    return ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)


def hinge(x: float) -> float:
    """Penalty for x > 0 only: residual of the inequality x <= 0."""
    return x if x > 0.0 else 0.0


def angle(a: Vec, v: Vec, b: Vec) -> float:
    """Unsigned angle a-v-b in radians, as the validator measures it (in [0, pi])."""
    return math.atan2(abs(cross(v, a, b)), dot(sub(a, v), sub(b, v)))


def line_offset(p: Vec, a: Vec, b: Vec) -> float:
    """Signed distance of p from line ab (0 when a and b coincide)."""
    n = dist(a, b)
    return cross(a, b, p) / n if n > 0.0 else 0.0


@dataclass
class Space:
    """Unknowns allocated while residuals are built, in a fixed order (so x is stable)."""

    scale: float
    points: list[str] = field(default_factory=list)  # the problem's labelled points
    anchors: list[str] = field(default_factory=list)  # auxiliary points
    scalars: list[str] = field(default_factory=list)  # radius and angle unknowns
    circles: dict[str, list[Radius]] = field(default_factory=dict)  # centre -> radii
    named_lines: dict[str, tuple[str, str]] = field(default_factory=dict)
    bisector_lines: list[tuple[str, str]] = field(default_factory=list)
    long_lines: list[tuple[str, ...]] = field(default_factory=list)  # through 3+ points

    def point(self, label: str) -> str:
        """Register the labelled point `label` as an unknown (once) and return the label."""
        if label not in self.points:
            self.points.append(label)
        return label

    def labels(self, labels: Iterable[str]) -> tuple[str, ...]:
        """Register each labelled point, as `point` does, and return the labels as a tuple."""
        return tuple(self.point(label) for label in labels)

    def anchor(self, name: str) -> str:
        """Register the auxiliary point `name` (e.g. an end of a named line) and return it."""
        if name not in self.anchors:
            self.anchors.append(name)
        return name

    def scalar(self, name: str) -> str:
        """Register the scalar unknown `name` (a radius or an angle) and return it."""
        if name not in self.scalars:
            self.scalars.append(name)
        return name

    def line(self, ref: LineRef) -> LineRef:
        """Register what the line needs: its points, anchors, or its drawing."""
        if ref.through is not None:
            self.labels(ref.through)
            if len(ref.through) > 2 and ref.through not in self.long_lines:
                self.long_lines.append(ref.through)
        elif ref.name is not None:
            if ref.name not in self.named_lines:
                ends = (self.anchor(f"~{ref.name}.1"), self.anchor(f"~{ref.name}.2"))
                self.named_lines[ref.name] = ends
        else:
            assert ref.bisector_of is not None
            pair = self.labels(ref.bisector_of)
            if pair not in self.bisector_lines:
                self.bisector_lines.append((pair[0], pair[1]))
        return ref

    def add_circle(self, center: str, radius: Radius) -> None:
        """Register a circle about `center` with the given radius spec, and the points it needs."""
        self.point(center)
        if radius[0] == "point":
            assert isinstance(radius[1], str)
            self.point(radius[1])
        known = self.circles.setdefault(center, [])
        if radius not in known:
            known.append(radius)

    def circle_at(self, center: str) -> str:
        """The centre of a circle a condition needs; a radius unknown if none is defined."""
        self.point(center)
        if not self.circles.get(center):
            self.add_circle(center, ("var", self.scalar(f"~r.{center}")))
        return center

    def size(self) -> int:
        """The number of unknowns: x and y per point and anchor, plus one per scalar."""
        return 2 * (len(self.points) + len(self.anchors)) + len(self.scalars)

    def state(self, x: np.ndarray) -> State:
        """Decode the unknown vector `x` into a State (coordinates by label, scalars by name)."""
        values = x.tolist()
        xy: dict[str, Vec] = {}
        for i, label in enumerate(self.points + self.anchors):
            xy[label] = (values[2 * i], values[2 * i + 1])
        offset = 2 * (len(self.points) + len(self.anchors))
        scalars = dict(zip(self.scalars, values[offset:], strict=True))
        return State(self, xy, scalars)


@dataclass
class State:
    """Coordinates of one candidate solution, resolved by the names conditions use."""

    space: Space
    xy: dict[str, Vec]
    scalars: dict[str, float]

    @property
    def scale(self) -> float:
        """The figure's scale, against which lengths are normalised."""
        return self.space.scale

    def pt(self, label: str) -> Vec:
        """The coordinates of point or anchor `label`."""
        return self.xy[label]

    def line(self, ref: LineRef) -> tuple[Vec, Vec]:
        """Two points fixing the line (distinct whenever the figure is not degenerate)."""
        if ref.through is not None:
            return self.xy[ref.through[0]], self.xy[ref.through[1]]
        if ref.name is not None:
            first, second = self.space.named_lines[ref.name]
            return self.xy[first], self.xy[second]
        assert ref.bisector_of is not None
        a, b = (self.xy[label] for label in ref.bisector_of)
        m = mid(a, b)
        return m, (m[0] - (b[1] - a[1]), m[1] + (b[0] - a[0]))

    def radius(self, center: str, spec: Radius) -> float:
        """The radius `spec` gives about `center`: distance to a point, a value, or a scalar."""
        kind, value = spec
        if kind == "point":
            assert isinstance(value, str)
            return dist(self.xy[center], self.xy[value])
        if kind == "value":
            assert isinstance(value, float)
            return value
        assert isinstance(value, str)
        return self.scalars[value]

    def radii(self, center: str) -> list[float]:
        """The radii of every circle registered about `center`."""
        return [self.radius(center, spec) for spec in self.space.circles[center]]


# Strict angle inequalities (arc type, non-trivial rotation) keep this much room, radians.
ANGLE_MARGIN = math.radians(1.0)


def sin_between(s: State, l1: LineRef, l2: LineRef) -> float:
    """Sine of the signed angle from line l1 to line l2 (zero when parallel)."""
    a, b = s.line(l1)
    p, q = s.line(l2)
    return cross((0.0, 0.0), unit(sub(b, a)), unit(sub(q, p)))


def cos_between(s: State, l1: LineRef, l2: LineRef) -> float:
    """Cosine of the angle between the directions of l1 and l2 (zero when perpendicular)."""
    a, b = s.line(l1)
    p, q = s.line(l2)
    return dot(unit(sub(b, a)), unit(sub(q, p)))


def spread(s: State, labels: tuple[str, ...]) -> float:
    """How far the points stray from the line through the two farthest of them."""
    pts = [s.pt(label) for label in labels]
    a, b = max(((p, q) for p in pts for q in pts), key=lambda pq: dist(*pq))
    return max(abs(line_offset(p, a, b)) for p in pts)


def not_collinear(labels: tuple[str, ...]) -> ResidualFn:
    """Hinge: the points stray at least MARGIN x scale from a common line."""
    return lambda s: [hinge(MARGIN - spread(s, labels) / s.scale)]


def on_line(s: State, p: Vec, ref: LineRef) -> float:
    """Signed offset of p from the line `ref`, divided by the figure's scale."""
    return line_offset(p, *s.line(ref)) / s.scale


@dataclass(frozen=True)
class Compiled:
    """A condition turned into residuals (zero exactly when it holds)."""

    condition: Condition
    residual: ResidualFn
