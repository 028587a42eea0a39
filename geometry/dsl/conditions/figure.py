"""Measurements on an executed scene, with labels resolved and the figure's own scale.

Checks ask a `Figure` for points, lines and circles by the names the data uses; a name the
scene lacks raises `Unevaluable` with a reason, which the validator reports as a failed
condition. All tolerances come from geometry.dsl.tolerances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from geometry.dsl.conditions.model import LineRef
from geometry.dsl.conditions.normalise import canon_label
from geometry.dsl.scene import Circle, GeoObject, Line, Point, Polygon, Ray, Scene, Segment
from geometry.dsl.tolerances import ANGLE_DEG, DEGENERATE_REL, LENGTH_REL, figure_scale


class Unevaluable(Exception):
    """A condition names something the figure lacks (or that is degenerate)."""


@dataclass
class Figure:
    """A scene plus its scale; resolves the data set's names to coordinates."""

    scene: Scene
    scale: float

    @classmethod
    def of(cls, scene: Scene) -> Figure:
        """The figure of `scene`, its scale taken over points and circle extents.

        Labels are read with typographic primes as ASCII (A′ is A'), as the data set's are.
        """
        objects: dict[str, GeoObject] = {}
        for label, obj in scene.objects.items():
            objects.setdefault(canon_label(label), obj)
        scene = Scene(objects)
        pts = list(scene.points().values())
        for obj in scene.objects.values():
            if isinstance(obj, Circle):
                c, r = obj.center, obj.radius
                pts += [Point(c.x - r, c.y - r), Point(c.x + r, c.y + r)]
            elif isinstance(obj, Polygon):
                pts += list(obj.vertices)
        return cls(scene, figure_scale(pts))

    @property
    def tol(self) -> float:
        """Largest length error accepted: LENGTH_REL of the figure's size."""
        return LENGTH_REL * self.scale

    def point(self, label: str) -> Point:
        """The point labelled `label`; Unevaluable if the scene has no such point."""
        obj = self.scene.objects.get(label)
        if not isinstance(obj, Point):
            raise Unevaluable(f"point {label} is not in the figure")
        return obj

    def line(self, ref: LineRef) -> tuple[Point, Point]:
        """Two distinct points fixing the line `ref` names."""
        if ref.through is not None:
            pts = [self.point(label) for label in ref.through]
            a, b = max(
                ((p, q) for p in pts for q in pts), key=lambda pair: pair[0].distance(pair[1])
            )
            if a.distance(b) <= DEGENERATE_REL * self.scale:
                raise Unevaluable(f"line {ref}: its points coincide")
            for p in pts:
                if distance_to_line(p, a, b) > self.tol:
                    raise Unevaluable(f"line {ref}: points {''.join(ref.through)} not collinear")
            return a, b
        if ref.name is not None:
            carrier = carrier_of(self.scene.objects.get(ref.name))
            if carrier is None:
                raise Unevaluable(f"line {ref.name} is not in the figure")
            return carrier
        assert ref.bisector_of is not None
        a, b = (self.point(label) for label in ref.bisector_of)
        for obj in self.scene.objects.values():
            carrier = carrier_of(obj)
            if carrier is not None and self.is_perpendicular_bisector(carrier, a, b):
                return carrier
        raise Unevaluable(f"no line in the figure is the {ref}")

    def is_perpendicular_bisector(self, line: tuple[Point, Point], a: Point, b: Point) -> bool:
        """Whether `line` passes through the midpoint of ab at right angles to it."""
        mid = Point((a.x + b.x) / 2, (a.y + b.y) / 2)
        return (
            distance_to_line(mid, *line) <= self.tol
            and abs(line_angle_deg(line, (a, b)) - 90.0) <= ANGLE_DEG
        )

    def circles_at(self, label: str) -> list[Circle]:
        """Scene circles centred at point `label` (concentric circles: all of them)."""
        center = self.point(label)
        found = [
            obj
            for obj in self.scene.objects.values()
            if isinstance(obj, Circle) and obj.center.distance(center) <= self.tol
        ]
        if not found:
            raise Unevaluable(f"no circle centred at {label} in the figure")
        return found

    def same(self, a: float, b: float) -> bool:
        """Two lengths agree within the figure's tolerance."""
        return abs(a - b) <= self.tol

    def coincide(self, p: Point, q: Point) -> bool:
        """Whether two points are within the figure's tolerance of each other."""
        return p.distance(q) <= self.tol


def carrier_of(obj: object) -> tuple[Point, Point] | None:
    """The two points fixing the line that carries a Line, Ray or Segment; None for other
    objects and for degenerate ones (both points equal), which carry no line."""
    pair: tuple[Point, Point] | None = None
    if isinstance(obj, Line):
        pair = obj.p, obj.q
    elif isinstance(obj, Ray):
        pair = obj.origin, obj.through
    elif isinstance(obj, Segment):
        pair = obj.a, obj.b
    if pair is None or pair[0].distance(pair[1]) == 0.0:
        return None
    return pair


def cross(o: Point, a: Point, b: Point) -> float:
    """z of (a - o) x (b - o): positive when o->a->b turns counter-clockwise."""
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x)


def distance_to_line(p: Point, a: Point, b: Point) -> float:
    """Unsigned distance of p from the line through a and b."""
    return abs(cross(a, b, p)) / a.distance(b)


def signed_side(p: Point, a: Point, b: Point) -> float:
    """Signed distance of p from line ab: positive on the left of a->b."""
    return cross(a, b, p) / a.distance(b)


def projection(p: Point, a: Point, b: Point) -> float:
    """Where p projects onto line ab, as a fraction of ab from a (0 at a, 1 at b)."""
    dx, dy = b.x - a.x, b.y - a.y
    return ((p.x - a.x) * dx + (p.y - a.y) * dy) / (dx * dx + dy * dy)


def angle_deg(a: Point, vertex: Point, b: Point) -> float:
    """The unsigned angle a-vertex-b in degrees, in [0, 180]."""
    if a.distance(vertex) == 0.0 or b.distance(vertex) == 0.0:
        raise Unevaluable("angle has a zero-length arm")
    return math.degrees(abs(math.atan2(cross(vertex, a, b), _dot(vertex, a, b))))


def signed_angle_deg(a: Point, vertex: Point, b: Point) -> float:
    """The counter-clockwise angle from vertex->a to vertex->b, in (-180, 180]."""
    return math.degrees(math.atan2(cross(vertex, a, b), _dot(vertex, a, b)))


def line_angle_deg(l1: tuple[Point, Point], l2: tuple[Point, Point]) -> float:
    """The angle between two lines in [0, 90] degrees."""
    d1 = math.atan2(l1[1].y - l1[0].y, l1[1].x - l1[0].x)
    d2 = math.atan2(l2[1].y - l2[0].y, l2[1].x - l2[0].x)
    diff = abs(math.degrees(d1 - d2)) % 180.0
    return min(diff, 180.0 - diff)


def max_offset_from_line(points: list[Point]) -> float:
    """How far the points stray from the line through the two farthest of them.

    A height, not a determinant or matrix rank: the same nearly-collinear shape gives the
    same verdict at every scale once compared against the figure's tolerance.
    """
    a, b = max(((p, q) for p in points for q in points), key=lambda pq: pq[0].distance(pq[1]))
    if a.distance(b) == 0.0:
        return 0.0
    return max(distance_to_line(p, a, b) for p in points)


def circumcircle(a: Point, b: Point, c: Point) -> tuple[Point, float] | None:
    """Centre and radius of the circle through a, b, c; None when they are collinear."""
    d = 2 * cross(a, b, c)
    if d == 0.0:
        return None
    a2 = (b.x - a.x) ** 2 + (b.y - a.y) ** 2
    c2 = (c.x - a.x) ** 2 + (c.y - a.y) ** 2
    ux = ((c.y - a.y) * a2 - (b.y - a.y) * c2) / d
    uy = ((b.x - a.x) * c2 - (c.x - a.x) * a2) / d
    center = Point(a.x + ux, a.y + uy)
    return center, center.distance(a)


def incenter(a: Point, b: Point, c: Point) -> Point:
    """Incenter: vertices weighted by the lengths of the opposite sides."""
    wa, wb, wc = b.distance(c), c.distance(a), a.distance(b)
    total = wa + wb + wc
    return Point((wa * a.x + wb * b.x + wc * c.x) / total, (wa * a.y + wb * b.y + wc * c.y) / total)


def rotate(p: Point, center: Point, degrees: float) -> Point:
    """p rotated counter-clockwise about center (negative degrees: clockwise)."""
    t = math.radians(degrees)
    dx, dy = p.x - center.x, p.y - center.y
    return Point(
        center.x + dx * math.cos(t) - dy * math.sin(t),
        center.y + dx * math.sin(t) + dy * math.cos(t),
    )


def _dot(o: Point, a: Point, b: Point) -> float:
    return (a.x - o.x) * (b.x - o.x) + (a.y - o.y) * (b.y - o.y)
