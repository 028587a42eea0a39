"""The functions that realise DSL commands; `commands.py` lists them in the command table.

Each realiser takes a `Call` (inputs already resolved and kind-checked) and returns one
result per output. Geometric impossibilities raise DSLFailure("geometric", ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from geometry.dsl import constructions as geo
from geometry.dsl.errors import DSLFailure
from geometry.dsl.expressions import Number
from geometry.dsl.overloads import Call, Precondition, Result, as_number
from geometry.dsl.scene import (
    Angle,
    Arc,
    Circle,
    GeoObject,
    Line,
    Point,
    Polygon,
    Ray,
    Segment,
    Vector,
)
from geometry.dsl.tolerances import DEGENERATE_REL

# Free points (`point : -> A`) are drawn in this square, the size of the public
# executor's canvas, so mixed programs of free and fixed points look alike there and here.
FREE_POINT_BOX = 100.0
# Where on an object a point "on" it lands, as a fraction of its defining points.
SEGMENT_SPAN = (0.15, 0.85)
RAY_SPAN = (0.2, 2.0)
LINE_SPAN = (-0.5, 1.5)


# -- preconditions -----------------------------------------------------------------
def distinct(*indices: int) -> Precondition:
    """The inputs at `indices` (all inputs if none given) are pairwise distinct points."""

    def check(call: Call) -> str | None:
        chosen = indices or tuple(range(len(call.args)))
        pts = [call.point(i) for i in chosen]
        try:
            geo.require_distinct(pts, [call.labels[i] for i in chosen], call.command)
        except DSLFailure as failure:
            return failure.message
        return None

    names = ", ".join(f"#{i + 1}" for i in indices) if indices else "all"
    return Precondition(f"points {names} distinct", check)


def positive(index: int) -> Precondition:
    """The number input at `index` is strictly positive (a radius, for instance)."""

    def check(call: Call) -> str | None:
        value = call.number(index).value
        if value > 0:
            return None
        return f"{call.command}: {call.labels[index]} = {value:g}, but it must be positive"

    return Precondition(f"input #{index + 1} > 0", check)


def side_count(index: int) -> Precondition:
    """The number input at `index` is a whole side count from 3 to the polygon limit."""

    def check(call: Call) -> str | None:
        n = call.number(index).value
        top = call.limits.max_polygon_sides
        if n == int(n) and 3 <= n <= top:
            return None
        return (
            f"{call.command}: the number of sides must be a whole number from 3 to {top}; got {n:g}"
        )

    return Precondition(f"input #{index + 1} a whole number >= 3", check)


def non_degenerate_polygon() -> Precondition:
    """At most the polygon limit of vertices (else a limit failure), enclosing non-zero area."""

    def check(call: Call) -> str | None:
        pts = [call.point(i) for i in range(len(call.args))]
        top = call.limits.max_polygon_sides
        if len(pts) > top:
            raise DSLFailure("limit", f"polygon has {len(pts)} vertices, over the limit of {top}")
        if call.limits.allow_flat_polygons:
            return None
        size = max(a.distance(b) for a in pts for b in pts)
        if abs(geo.shoelace(pts)) <= DEGENERATE_REL * size * size:
            return f"polygon: vertices {' '.join(call.labels)} are collinear (zero area)"
        return None

    return Precondition("vertices not all collinear", check)


# -- helpers -----------------------------------------------------------------------
def _line_through(p: Point, dx: float, dy: float) -> Line:
    return Line(p, Point(p.x + dx, p.y + dy))


def _angle_of(call: Call, index: int) -> float:
    """An angle input in radians (plain numbers are degrees)."""
    return call.number(index).radians()


def _uniform(call: Call, span: tuple[float, float]) -> float:
    return call.rng.uniform(*span)


# -- points, lines, circles --------------------------------------------------------
def point_free(call: Call) -> list[Result]:
    """`point : -> A`: a seeded point in the [0, FREE_POINT_BOX]^2 square."""
    return [Point(call.rng.uniform(0, FREE_POINT_BOX), call.rng.uniform(0, FREE_POINT_BOX))]


def point_xy(call: Call) -> list[Result]:
    """`point : x y -> A`: the point with the given coordinates."""
    return [Point(call.number(0).value, call.number(1).value)]


def point_on(call: Call) -> list[Result]:
    """`point : obj -> A`: a seeded point on a circle, arc, line, segment or ray."""
    obj = call.args[0]
    if isinstance(obj, Circle | Arc):
        if isinstance(obj, Circle):
            angle = call.rng.uniform(0, geo.TAU)
        else:
            span = (obj.end - obj.start) % geo.TAU
            angle = obj.start + span * call.rng.uniform(0.1, 0.9)
        return [geo.arc_point(Arc(obj.center, obj.radius, 0, 0), angle)]
    assert isinstance(obj, Line | Segment | Ray)
    base, dx, dy, _, _ = geo.carrier(obj)
    spans = {Segment: SEGMENT_SPAN, Ray: RAY_SPAN, Line: LINE_SPAN}
    t = _uniform(call, spans[type(obj)])
    return [Point(base.x + t * dx, base.y + t * dy)]


def two_points(
    kind: type[Segment] | type[Ray] | type[Line] | type[Vector],
) -> Callable[[Call], list[Result]]:
    """A realiser that builds a `kind` (segment, ray, line or vector) from its two points."""

    def realise(call: Call) -> list[Result]:
        return [kind(call.point(0), call.point(1))]

    return realise


def line_parallel_through(call: Call) -> list[Result]:
    """`parallel_line` and `line : P l`: the line through P parallel to the linear input."""
    assert isinstance(call.args[1], Line | Segment | Ray)
    return [_line_through(call.point(0), *geo.direction(call.args[1]))]


def line_orthogonal_through(call: Call) -> list[Result]:
    """`orthogonal_line`: the line through point P perpendicular to the linear input."""
    assert isinstance(call.args[1], Line | Segment | Ray)
    dx, dy = geo.direction(call.args[1])
    return [_line_through(call.point(0), -dy, dx)]


def circle_through(call: Call) -> list[Result]:
    """`circle : O A`: the circle with centre O through A."""
    return [Circle(call.point(0), call.point(0).distance(call.point(1)))]


def circle_radius(call: Call) -> list[Result]:
    """`circle : O r`: the circle with centre O and radius r (a number or a segment's length)."""
    return [Circle(call.point(0), as_number(call.args[1]).value)]


def circle_three(call: Call) -> list[Result]:
    """`circle : A B C`: the circumcircle; collinear points are a geometric failure."""
    return [geo.circumcircle(call.point(0), call.point(1), call.point(2), call.labels)]


def _ends(call: Call) -> tuple[Point, Point]:
    seg = call.args[0]
    if isinstance(seg, Segment):
        return seg.a, seg.b
    return call.point(0), call.point(1)


def midpoint(call: Call) -> list[Result]:
    """`midpoint`: the midpoint of A and B, or of a segment."""
    a, b = _ends(call)
    return [Point((a.x + b.x) / 2, (a.y + b.y) / 2)]


def line_bisector(call: Call) -> list[Result]:
    """`line_bisector`: the perpendicular bisector of AB; A = B is a geometric failure."""
    a, b = _ends(call)
    if geo.coincide(a, b):
        raise DSLFailure(
            "geometric", f"line_bisector: the two ends of {' '.join(call.labels)} coincide"
        )
    mid = Point((a.x + b.x) / 2, (a.y + b.y) / 2)
    return [_line_through(mid, -(b.y - a.y), b.x - a.x)]


def _bisector_direction(ux: float, uy: float, vx: float, vy: float) -> tuple[float, float]:
    nu, nv = math.hypot(ux, uy), math.hypot(vx, vy)
    sx, sy = ux / nu + vx / nv, uy / nu + vy / nv
    if math.hypot(sx, sy) <= DEGENERATE_REL:  # a straight angle: bisector is perpendicular
        return -uy / nu, ux / nu
    return sx, sy


def angular_bisector_points(call: Call) -> list[Result]:
    """`angular_bisector : A B C`: the bisector line of angle ABC, through B."""
    a, b, c = call.point(0), call.point(1), call.point(2)
    d = _bisector_direction(a.x - b.x, a.y - b.y, c.x - b.x, c.y - b.y)
    return [_line_through(b, *d)]


def angular_bisector_angle(call: Call) -> list[Result]:
    """`angular_bisector : angle`: the bisector line of an angle object, through its vertex."""
    angle = call.args[0]
    assert isinstance(angle, Angle)
    a, b, c = angle.a, angle.vertex, angle.b
    return [_line_through(b, *_bisector_direction(a.x - b.x, a.y - b.y, c.x - b.x, c.y - b.y))]


def angular_bisector_lines(call: Call) -> list[Result]:
    """`angular_bisector : l m`: both bisectors of two crossing lines, through their crossing."""
    first, second = call.args[0], call.args[1]
    assert isinstance(first, Line | Segment | Ray) and isinstance(second, Line | Segment | Ray)
    as_lines = [Line(*_two(o)) for o in (first, second)]
    vertex = geo.intersect_linear(as_lines[0], as_lines[1], call.labels)
    dx, dy = _bisector_direction(*geo.direction(first), *geo.direction(second))
    return [_line_through(vertex, dx, dy), _line_through(vertex, -dy, dx)]


def _two(obj: Line | Segment | Ray) -> tuple[Point, Point]:
    base, dx, dy, _, _ = geo.carrier(obj)
    return base, Point(base.x + dx, base.y + dy)


# -- intersections -----------------------------------------------------------------
def intersect_linear(call: Call) -> list[Result]:
    """`intersect` of two linear objects: their crossing; parallel or off a ray/segment fails."""
    a, b = call.args
    assert isinstance(a, Line | Segment | Ray) and isinstance(b, Line | Segment | Ray)
    return [geo.intersect_linear(a, b, call.labels)]


def intersect_linear_round(call: Call) -> list[Result]:
    """`intersect` of a line/ray/segment and a circle/arc (either order): points along the line."""
    a, b = call.args
    if isinstance(a, Circle | Arc):
        assert isinstance(b, Line | Segment | Ray)
        return list(geo.intersect_linear_round(b, a, call.labels[::-1]))
    assert isinstance(a, Line | Segment | Ray) and isinstance(b, Circle | Arc)
    return list(geo.intersect_linear_round(a, b, call.labels))


def intersect_rounds(call: Call) -> list[Result]:
    """`intersect` of two circles/arcs: common points, the first left of centre1 -> centre2."""
    a, b = call.args
    assert isinstance(a, Circle | Arc) and isinstance(b, Circle | Arc)
    return list(geo.intersect_rounds(a, b, call.labels))


def one_or_two(call: Call) -> tuple[int, ...]:
    """Output counts for `intersect` with a circle or arc: one or two points may be named."""
    return (1, 2)


# -- transformations ---------------------------------------------------------------
def _object(call: Call) -> GeoObject:
    obj = call.args[0]
    assert not isinstance(obj, Number)
    return obj


def rotate_angle_center(call: Call) -> list[Result]:
    """`rotate : obj angle O`: `obj` turned counter-clockwise by the angle about O."""
    theta, center = _angle_of(call, 1), call.point(2)
    return [geo.transform(_object(call), lambda p: geo.rotate_point(p, center, theta), False)]


def rotate_center_angle(call: Call) -> list[Result]:
    """`rotate : obj O angle`: as `rotate_angle_center`, with centre before angle."""
    center, theta = call.point(1), _angle_of(call, 2)
    return [geo.transform(_object(call), lambda p: geo.rotate_point(p, center, theta), False)]


def mirror_point(call: Call) -> list[Result]:
    """`mirror : obj O`: the image of `obj` under the point reflection in O."""
    c = call.point(1)
    return [geo.transform(_object(call), lambda p: Point(2 * c.x - p.x, 2 * c.y - p.y), False)]


def mirror_line(call: Call) -> list[Result]:
    """`mirror : obj l`: the image of `obj` reflected across the line carrying l."""
    axis = call.args[1]
    assert isinstance(axis, Line | Segment | Ray)
    return [geo.transform(_object(call), lambda p: geo.reflect_point(p, axis), True)]


def translate(call: Call) -> list[Result]:
    """`translate : obj v`: `obj` shifted by the vector v."""
    vec = call.args[1]
    assert isinstance(vec, Vector)
    dx, dy = vec.end.x - vec.start.x, vec.end.y - vec.start.y
    return [geo.transform(_object(call), lambda p: Point(p.x + dx, p.y + dy), False)]


# -- tangents, polar ---------------------------------------------------------------
def tangent(call: Call) -> list[Result]:
    """`tangent : P circle`: the two tangents from P outside, or the tangent at P on the circle."""
    p, circle = call.point(0), call.args[1]
    assert isinstance(circle, Circle)
    touches = geo.tangent_points(p, circle, call.labels)
    if len(touches) == 1:  # p on the circle: the tangent at p, perpendicular to the radius
        return [_line_through(p, -(p.y - circle.center.y), p.x - circle.center.x)]
    return [Line(p, t) for t in touches]


def tangent_counts(call: Call) -> tuple[int, ...]:
    """Output counts for `tangent`: one line (P on the circle) or two."""
    return (1, 2)


def polar(call: Call) -> list[Result]:
    """`polar : P circle`: the polar line of P; P at the centre is a geometric failure."""
    p, circle = call.point(0), call.args[1]
    assert isinstance(circle, Circle)
    c = circle.center
    dx, dy = p.x - c.x, p.y - c.y
    d2 = dx * dx + dy * dy
    if d2 <= (DEGENERATE_REL * geo.scale_of(p, c)) ** 2:
        raise DSLFailure("geometric", f"polar: {call.labels[0]} is the centre of {call.labels[1]}")
    # The polar is perpendicular to c->p at distance r^2/|cp| from c.
    k = circle.radius**2 / d2
    return [_line_through(Point(c.x + k * dx, c.y + k * dy), -dy, dx)]


# -- polygons, arcs, angles --------------------------------------------------------
def _polygon_with_sides(vertices: Sequence[Point]) -> list[Result]:
    sides: list[Result] = [
        Segment(v, vertices[(i + 1) % len(vertices)]) for i, v in enumerate(vertices)
    ]
    return [Polygon(tuple(vertices)), *sides]


def polygon(call: Call) -> list[Result]:
    """`polygon : A B C ...`: the polygon, then its sides AB, BC, ..., or the polygon alone."""
    full = _polygon_with_sides([call.point(i) for i in range(len(call.args))])
    return full if call.n_outputs == len(full) else full[:1]


def polygon_counts(call: Call) -> tuple[int, ...]:
    """Output counts for `polygon : A B C ...`: the polygon alone, or with all its sides."""
    return (1, len(call.args) + 1)


def regular_polygon(call: Call) -> list[Result]:
    """`polygon : A B n`: the counter-clockwise regular n-gon on AB, its sides, its new vertices."""
    n = int(call.number(2).value)
    vertices = geo.regular_polygon(call.point(0), call.point(1), n)
    with_sides = _polygon_with_sides(vertices)
    if call.n_outputs == n - 1:  # short form: the polygon and its new vertices
        return [with_sides[0], *vertices[2:]]
    return [*with_sides, *vertices[2:]]


def regular_counts(call: Call) -> tuple[int, ...]:
    """Output counts for `polygon : A B n`: all outputs, or the polygon and new vertices only."""
    n = call.number(2).value
    if n != int(n) or n < 3:
        return (1,)  # the side_count precondition reports the real problem
    return (2 * int(n) - 1, int(n) - 1)


def semicircle(call: Call) -> list[Result]:
    """`semicircle : A B`: the half circle on diameter AB, on the left of A -> B."""
    a, b = call.point(0), call.point(1)
    center = Point((a.x + b.x) / 2, (a.y + b.y) / 2)
    # Counter-clockwise from b to a: the half on the left of the direction a -> b.
    start = math.atan2(b.y - center.y, b.x - center.x)
    return [Arc(center, a.distance(b) / 2, start, start + math.pi)]


def angle(call: Call) -> list[Result]:
    """`angle : A B C`: the angle at B with its value in radians, in [0, pi]."""
    a, b, c = call.point(0), call.point(1), call.point(2)
    return [Angle(a, b, c, geo.angle_value(a, b, c))]
