"""The scene an executed program yields: labelled geometric objects in float coordinates.

The validator checks conditions on exactly this object, the one that was executed and
rendered, so what a model sees in feedback is what was judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Point:
    """A point in the plane (float coordinates)."""

    x: float
    y: float

    def __sub__(self, other: Point) -> tuple[float, float]:
        return (self.x - other.x, self.y - other.y)

    def distance(self, other: Point) -> float:
        """The Euclidean distance to `other`."""
        return math.hypot(self.x - other.x, self.y - other.y)


@dataclass(frozen=True)
class Segment:
    """The segment with ends `a` and `b`."""

    a: Point
    b: Point


@dataclass(frozen=True)
class Ray:
    """The ray from `origin` through `through`."""

    origin: Point
    through: Point  # a second point fixing the direction


@dataclass(frozen=True)
class Line:
    """The infinite line through `p` and `q`."""

    p: Point
    q: Point  # two distinct points on the line


@dataclass(frozen=True)
class Circle:
    """The circle with centre `center` and radius `radius`."""

    center: Point
    radius: float


@dataclass(frozen=True)
class Arc:
    """Counter-clockwise arc of a circle from angle `start` to `end` (radians)."""

    center: Point
    radius: float
    start: float
    end: float


@dataclass(frozen=True)
class Polygon:
    """A polygon given by its vertices in order (closed: the last joins the first)."""

    vertices: tuple[Point, ...]


@dataclass(frozen=True)
class Angle:
    """Angle at `vertex` from ray vertex->a to ray vertex->b; `value` in radians, in [0, pi]."""

    a: Point
    vertex: Point
    b: Point
    value: float


@dataclass(frozen=True)
class Vector:
    """The vector from `start` to `end` (its displacement, for `translate`)."""

    start: Point
    end: Point


@dataclass(frozen=True)
class Measure:
    """A number a program computed (distance, area, ratio, constant, ...)."""

    value: float


GeoObject = Point | Segment | Ray | Line | Circle | Arc | Polygon | Angle | Vector | Measure


@dataclass
class Scene:
    """Objects by label, in creation order. Unlabelled (`_`) outputs are not stored."""

    objects: dict[str, GeoObject] = field(default_factory=dict)

    def points(self) -> dict[str, Point]:
        """The scene's points by label, in creation order."""
        return {k: v for k, v in self.objects.items() if isinstance(v, Point)}

    def of_type(self, kind: type) -> list[GeoObject]:
        """The scene's objects that are instances of `kind`, in creation order."""
        return [v for v in self.objects.values() if isinstance(v, kind)]
