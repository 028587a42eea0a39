"""An executed scene in the public GeoBuildBench validator's terms, fitted into its window.

The public validator (ooongs/GeoBuildBench at 5a31908, `src/core/geo_types.py` and
`Construction.fit_to_window` in `src/core/random_constr.py`) keeps lines as a unit normal `n`
and offset `c` (x . n == c), and before any check rescales the whole figure into a 100x100
window with random borders of 10-25% per side. Its checks then compare in *window* units, so
they depend on that scale. This module rebuilds our scene in that form (written from those
facts, no code taken over) and fits it into the window with both borders at the middle of the
public range (17.5%): the public validator draws the borders at random, so a verdict that
changes with them is not reproducible, and the differential fixture lists such programs apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from geometry.dsl import scene as sc

WINDOW = 100.0  # the public display size, both axes
BORDER = 0.175  # each side's border share: the middle of the public 0.10-0.25 draw
MIN_EXTENT = 0.01  # the public floor on the figure's extent per axis before scaling

Vec = np.ndarray


def _perp(vec: Vec) -> Vec:
    """The public `vector_perp_rot`: (x, y) -> (y, -x)."""
    return np.array((vec[1], -vec[0]))


def isclose(a: float, b: float) -> bool:
    """numpy's default isclose (rtol 1e-5 of `b`, atol 1e-8): the public "exact" test."""
    return bool(np.isclose(a, b))


class PPoint:
    """A point (`a`: its coordinates)."""

    def __init__(self, a: Vec) -> None:
        self.a = np.array(a, dtype=float)

    def move(self, ratio: float, shift: Vec) -> None:
        """Scale about the origin, then translate (the public scale and translate)."""
        self.a = self.a * ratio + shift

    def anchors(self) -> list[Vec]:
        """The points the public window fit bounds (its `important_points`)."""
        return [self.a]


class PLine:
    """A line x . n == c with unit normal n; `v` is the public direction perp(n)."""

    def __init__(self, n: Vec, c: float) -> None:
        n = np.array(n, dtype=float)
        if not (n != 0).any():
            raise ValueError("line with a zero normal")
        norm = float(np.linalg.norm(n))
        if not isclose(norm, 1):
            n, c = n / norm, c / norm
        self.n, self.c = n, float(c)
        self.v = _perp(self.n)

    def move(self, ratio: float, shift: Vec) -> None:
        """Scale about the origin, then translate."""
        self.c = self.c * ratio + float(np.dot(shift, self.n))

    def anchors(self) -> list[Vec]:
        """The foot of the perpendicular from the origin (what the public fit uses)."""
        return [self.n * self.c]

    def contains(self, x: Vec) -> bool:
        """x . n isclose c: relative to the offset, so it depends on where the window puts it."""
        return isclose(float(np.dot(x, self.n)), self.c)


class PSegment(PLine):
    """A segment; also a line for every public test that takes one."""

    def __init__(self, p1: Vec, p2: Vec) -> None:
        p1, p2 = np.array(p1, dtype=float), np.array(p2, dtype=float)
        if not (p1 != p2).any():
            raise ValueError("segment with identical ends")
        normal = _perp(p1 - p2)
        super().__init__(normal, float(np.dot(p1, normal)))
        self.end_points = np.array([p1, p2])

    def move(self, ratio: float, shift: Vec) -> None:
        """Scale and translate the line and both ends."""
        super().move(ratio, shift)
        self.end_points = self.end_points * ratio + shift

    def anchors(self) -> list[Vec]:
        """The midpoint."""
        return [np.average(self.end_points, axis=0)]

    def contains(self, x: Vec) -> bool:
        """On the line, and not before either end (an end's projection isclose 0 counts)."""
        if not super().contains(x):
            return False
        p1, p2 = self.end_points
        for along in (np.dot(p2 - p1, x - p1), np.dot(p1 - p2, x - p2)):
            if along < 0 and not isclose(float(along), 0):
                return False
        return True


class PRay(PLine):
    """A ray from `start_point` along `v`."""

    def __init__(self, start: Vec, vec: Vec) -> None:
        normal = -_perp(np.array(vec, dtype=float))
        super().__init__(normal, float(np.dot(start, normal)))
        self.start_point = np.array(start, dtype=float)

    def move(self, ratio: float, shift: Vec) -> None:
        """Scale and translate the line and the start."""
        super().move(ratio, shift)
        self.start_point = self.start_point * ratio + shift

    def anchors(self) -> list[Vec]:
        """The start."""
        return [self.start_point]

    def contains(self, x: Vec) -> bool:
        """On the line and not behind the start."""
        return super().contains(x) and float(np.dot(self.v, x - self.start_point)) >= 0


class PCircle:
    """A circle (centre `c`, radius `r`)."""

    def __init__(self, c: Vec, r: float) -> None:
        self.c, self.r = np.array(c, dtype=float), float(r)

    def move(self, ratio: float, shift: Vec) -> None:
        """Scale and translate."""
        self.c, self.r = self.c * ratio + shift, self.r * ratio

    def anchors(self) -> list[Vec]:
        """The centre."""
        return [self.c]

    def contains(self, x: Vec) -> bool:
        """|x - c|^2 isclose r^2 (squared, relative: the public test)."""
        diff = x - self.c
        return isclose(float(np.dot(diff, diff)), self.r**2)


class PArc(PCircle):
    """An arc: a circle (so it counts as one wherever the public code looks for circles)."""

    def __init__(self, c: Vec, r: float, angles: tuple[float, float]) -> None:
        super().__init__(c, r)
        self.angles = [a % (2 * np.pi) for a in angles]

    def anchors(self) -> list[Vec]:
        """The midpoint of the chord between the arc's ends."""
        ends = [self.c + self.r * np.array((np.cos(a), np.sin(a))) for a in self.angles]
        return [(ends[0] + ends[1]) / 2]

    def contains(self, x: Vec) -> bool:
        """On the circle and within the arc's angles (the public parity test)."""
        if not super().contains(x):
            return False
        a1, a2 = self.angles
        at = float(np.arctan2(*(x - self.c)[::-1]))
        if isclose(at, a1) or isclose(at, a2):
            return True
        if a1 == a2:
            return False
        return (int(a1 <= a2) + int(a1 <= at) + int(at <= a2)) % 2 == 1


class PPolygon:
    """A polygon's vertices in order; it adds nothing to the window fit."""

    def __init__(self, points: list[Vec]) -> None:
        self.points = np.array(points, dtype=float)

    def move(self, ratio: float, shift: Vec) -> None:
        """Scale and translate."""
        self.points = self.points * ratio + shift

    def anchors(self) -> list[Vec]:
        """None: the public fit ignores polygons."""
        return []


class PVector:
    """A vector drawn between its ends."""

    def __init__(self, start: Vec, end: Vec) -> None:
        self.end_points = np.array([start, end], dtype=float)

    def move(self, ratio: float, shift: Vec) -> None:
        """Scale and translate."""
        self.end_points = self.end_points * ratio + shift

    def anchors(self) -> list[Vec]:
        """Both ends."""
        return list(self.end_points)


class POther:
    """Anything the public checks never read as geometry (angles, measures, numbers)."""

    def move(self, ratio: float, shift: Vec) -> None:
        """Unchanged: the public fit does not place it (angles are not drawable)."""

    def anchors(self) -> list[Vec]:
        """None."""
        return []


PObject = PPoint | PLine | PCircle | PPolygon | PVector | POther


def _xy(point: sc.Point) -> Vec:
    return np.array((point.x, point.y), dtype=float)


def _convert(obj: sc.GeoObject) -> PObject:
    if isinstance(obj, sc.Point):
        return PPoint(_xy(obj))
    if isinstance(obj, sc.Segment):
        return PSegment(_xy(obj.a), _xy(obj.b))
    if isinstance(obj, sc.Ray):
        return PRay(_xy(obj.origin), _xy(obj.through) - _xy(obj.origin))
    if isinstance(obj, sc.Line):
        p, q = _xy(obj.p), _xy(obj.q)
        normal = _perp(p - q)
        return PLine(normal, float(np.dot(p, normal)))
    if isinstance(obj, sc.Arc):
        return PArc(_xy(obj.center), obj.radius, (obj.start, obj.end))
    if isinstance(obj, sc.Circle):
        return PCircle(_xy(obj.center), obj.radius)
    if isinstance(obj, sc.Polygon):
        return PPolygon([_xy(v) for v in obj.vertices])
    if isinstance(obj, sc.Vector):
        return PVector(_xy(obj.start), _xy(obj.end))
    return POther()


@dataclass
class PublicFigure:
    """The scene's objects by label, in program order, fitted into the public window."""

    objects: dict[str, PObject] = field(default_factory=dict)
    scale: float = 1.0  # window units per program unit (the public `scale_factor`)

    def point(self, label: str) -> Vec | None:
        """The coordinates of point `label`, None when it is absent or not a point."""
        obj = self.objects.get(label)
        return obj.a if isinstance(obj, PPoint) else None


def fit_to_window(scene: sc.Scene) -> PublicFigure:
    """`scene` in public form, scaled and moved into the window as the public fit does."""
    figure = PublicFigure({label: _convert(obj) for label, obj in scene.objects.items()})
    anchors = [a for obj in figure.objects.values() for a in obj.anchors()]
    if not anchors:
        return figure
    low, high = np.min(anchors, axis=0), np.max(anchors, axis=0)
    extent = np.maximum(MIN_EXTENT, high - low)
    border = BORDER * WINDOW
    dest_low, dest_high = np.array((border, border)), np.array((WINDOW - border,) * 2)
    ratio = float(np.min((dest_high - dest_low) / extent))
    # The public fit centres the scaled bounding box of the anchors in the window.
    shift = (dest_low + dest_high) / 2 - (low * ratio + high * ratio) / 2
    for obj in figure.objects.values():
        obj.move(ratio, shift)
    figure.scale = ratio
    return figure
