"""Float geometry behind the DSL commands, on the scene's own types.

Every function either returns objects or raises DSLFailure("geometric", ...) naming the
inputs (by the labels the caller passes) and why the construction does not exist.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from geometry.dsl.errors import DSLFailure
from geometry.dsl.scene import Arc, Circle, GeoObject, Line, Point, Polygon, Ray, Segment, Vector
from geometry.dsl.tolerances import DEGENERATE_REL, MIN_SCALE, TOUCH_REL

Linear = Line | Segment | Ray
Round = Circle | Arc
TAU = 2.0 * math.pi


def scale_of(*points: Point) -> float:
    """Size against which coincidence is judged: the largest coordinate (at least MIN_SCALE)."""
    return max([MIN_SCALE] + [max(abs(p.x), abs(p.y)) for p in points])


def coincide(a: Point, b: Point) -> bool:
    """Whether a and b are within DEGENERATE_REL of their scale: the executor's "same point"."""
    return a.distance(b) <= DEGENERATE_REL * scale_of(a, b)


def require_distinct(points: Sequence[Point], names: Sequence[str], command: str) -> None:
    """Raise when two of `points` coincide, naming both."""
    for i, a in enumerate(points):
        for j in range(i + 1, len(points)):
            if coincide(a, points[j]):
                raise DSLFailure(
                    "geometric",
                    f"{command}: {names[i]} and {names[j]} coincide at ({a.x:g}, {a.y:g}); "
                    "they must be distinct points",
                )


def cross(ux: float, uy: float, vx: float, vy: float) -> float:
    """The cross product u x v of two plane vectors (positive when v turns left of u)."""
    return ux * vy - uy * vx


def carrier(obj: Linear) -> tuple[Point, float, float, float, float]:
    """Base point, direction (dx, dy) and parameter range of a line, ray or segment."""
    if isinstance(obj, Segment):
        return obj.a, obj.b.x - obj.a.x, obj.b.y - obj.a.y, 0.0, 1.0
    if isinstance(obj, Ray):
        return obj.origin, obj.through.x - obj.origin.x, obj.through.y - obj.origin.y, 0.0, math.inf
    return obj.p, obj.q.x - obj.p.x, obj.q.y - obj.p.y, -math.inf, math.inf


def direction(obj: Linear) -> tuple[float, float]:
    """The direction vector (dx, dy) of a line, ray or segment, from its defining points."""
    _, dx, dy, _, _ = carrier(obj)
    return dx, dy


def _within(t: float, lo: float, hi: float) -> bool:
    slack = DEGENERATE_REL * max(1.0, abs(t))
    return lo - slack <= t <= hi + slack


def kind_name(obj: GeoObject) -> str:
    """The object's kind as written in messages: "point", "segment", "circle", ..."""
    return type(obj).__name__.lower()


def intersect_linear(a: Linear, b: Linear, names: Sequence[str]) -> Point:
    """The crossing of two lines/rays/segments; raises when parallel or outside either."""
    p, ux, uy, lo1, hi1 = carrier(a)
    q, vx, vy, lo2, hi2 = carrier(b)
    denom = cross(ux, uy, vx, vy)
    if abs(denom) <= DEGENERATE_REL * math.hypot(ux, uy) * math.hypot(vx, vy):
        raise DSLFailure(
            "geometric",
            f"intersect: {names[0]} and {names[1]} are parallel, so they have no single "
            "intersection point",
        )
    wx, wy = q.x - p.x, q.y - p.y
    t = cross(wx, wy, vx, vy) / denom
    s = cross(wx, wy, ux, uy) / denom
    point = Point(p.x + t * ux, p.y + t * uy)
    for obj, name, param, lo, hi in ((a, names[0], t, lo1, hi1), (b, names[1], s, lo2, hi2)):
        if not _within(param, lo, hi):
            raise DSLFailure(
                "geometric",
                f"intersect: the lines of {names[0]} and {names[1]} meet at "
                f"({point.x:g}, {point.y:g}), which lies outside {kind_name(obj)} {name}; "
                "extend it with `line` or `ray` if the problem allows",
            )
    return point


def on_arc(arc: Arc, point: Point) -> bool:
    """Whether `point` (on the arc's circle) lies on the counter-clockwise arc."""
    angle = math.atan2(point.y - arc.center.y, point.x - arc.center.x)
    span = (arc.end - arc.start) % TAU
    offset = (angle - arc.start) % TAU
    slack = DEGENERATE_REL * TAU
    return offset <= span + slack or offset >= TAU - slack


def _as_circle(obj: Round) -> Circle:
    return obj if isinstance(obj, Circle) else Circle(obj.center, obj.radius)


def intersect_linear_round(lin: Linear, rnd: Round, names: Sequence[str]) -> list[Point]:
    """Points where a line/ray/segment meets a circle or arc, in order along the line.

    A line that misses touching by less than TOUCH_REL of the radius touches (one point).
    """
    circle = _as_circle(rnd)
    p, dx, dy, lo, hi = carrier(lin)
    length = math.hypot(dx, dy)
    ux, uy = dx / length, dy / length
    # Foot of the perpendicular from the centre, and its signed distance along the line.
    along = (circle.center.x - p.x) * ux + (circle.center.y - p.y) * uy
    foot = Point(p.x + along * ux, p.y + along * uy)
    gap = foot.distance(circle.center)
    r = circle.radius
    if gap > r * (1 + TOUCH_REL):
        raise DSLFailure(
            "geometric",
            f"intersect: {names[0]} and {names[1]} do not meet: the line is {gap:g} from the "
            f"centre, more than the radius {r:g}",
        )
    half = math.sqrt(max(r * r - gap * gap, 0.0))
    offsets = [0.0] if half <= TOUCH_REL * r else [-half, half]
    found = []
    for offset in offsets:
        point = Point(foot.x + offset * ux, foot.y + offset * uy)
        t = (along + offset) / length
        if _within(t, lo, hi) and (isinstance(rnd, Circle) or on_arc(rnd, point)):
            found.append(point)
    if not found:
        raise DSLFailure(
            "geometric",
            f"intersect: the crossings of {names[0]} and {names[1]} lie outside "
            f"{' or '.join(k for k in (kind_name(lin), kind_name(rnd)) if k != 'line')}",
        )
    return found


def intersect_rounds(a: Round, b: Round, names: Sequence[str]) -> list[Point]:
    """Points where two circles/arcs meet; the first lies left of the line from centre a to b."""
    c1, c2 = _as_circle(a), _as_circle(b)
    dx, dy = c2.center.x - c1.center.x, c2.center.y - c1.center.y
    d = math.hypot(dx, dy)
    if d <= DEGENERATE_REL * scale_of(c1.center, c2.center):
        raise DSLFailure(
            "geometric",
            f"intersect: {names[0]} and {names[1]} are concentric, so they meet nowhere or "
            "everywhere",
        )
    r1, r2 = c1.radius, c2.radius
    touch = TOUCH_REL * max(r1, r2)
    if d > r1 + r2 + touch or d < abs(r1 - r2) - touch:
        where = "apart" if d > r1 + r2 else "one inside the other"
        raise DSLFailure(
            "geometric",
            f"intersect: {names[0]} and {names[1]} do not meet (centres {d:g} apart, radii "
            f"{r1:g} and {r2:g}: {where})",
        )
    along = (d * d + r1 * r1 - r2 * r2) / (2 * d)
    height = math.sqrt(max(r1 * r1 - along * along, 0.0))
    ux, uy = dx / d, dy / d
    base = Point(c1.center.x + along * ux, c1.center.y + along * uy)
    heights = [0.0] if height <= touch else [height, -height]
    found = [Point(base.x - h * uy, base.y + h * ux) for h in heights]
    found = [pt for pt in found if all(isinstance(o, Circle) or on_arc(o, pt) for o in (a, b))]
    if not found:
        raise DSLFailure(
            "geometric", f"intersect: the crossings of {names[0]} and {names[1]} lie off the arc"
        )
    return found


def circumcircle(a: Point, b: Point, c: Point, names: Sequence[str]) -> Circle:
    """The circle through three points; raises when they are collinear."""
    d = 2 * cross(b.x - a.x, b.y - a.y, c.x - a.x, c.y - a.y)
    size = max(a.distance(b), b.distance(c), c.distance(a))
    if abs(d) <= DEGENERATE_REL * 2 * size * size:
        raise DSLFailure(
            "geometric",
            f"circle: {', '.join(names)} are collinear, so no circle passes through all three",
        )
    b2 = (b.x - a.x) ** 2 + (b.y - a.y) ** 2
    c2 = (c.x - a.x) ** 2 + (c.y - a.y) ** 2
    ux = ((c.y - a.y) * b2 - (b.y - a.y) * c2) / d
    uy = ((b.x - a.x) * c2 - (c.x - a.x) * b2) / d
    center = Point(a.x + ux, a.y + uy)
    return Circle(center, center.distance(a))


def angle_value(a: Point, vertex: Point, b: Point) -> float:
    """The unsigned angle a-vertex-b in radians, in [0, pi]."""
    ux, uy = a.x - vertex.x, a.y - vertex.y
    vx, vy = b.x - vertex.x, b.y - vertex.y
    return abs(math.atan2(cross(ux, uy, vx, vy), ux * vx + uy * vy))


def rotate_point(p: Point, center: Point, theta: float) -> Point:
    """`p` turned counter-clockwise by `theta` radians about `center`."""
    c, s = math.cos(theta), math.sin(theta)
    x, y = p.x - center.x, p.y - center.y
    return Point(center.x + c * x - s * y, center.y + s * x + c * y)


def reflect_point(p: Point, axis: Linear) -> Point:
    """Mirror image of `p` across the line carrying `axis`."""
    base, dx, dy, _, _ = carrier(axis)
    t = ((p.x - base.x) * dx + (p.y - base.y) * dy) / (dx * dx + dy * dy)
    fx, fy = base.x + t * dx, base.y + t * dy
    return Point(2 * fx - p.x, 2 * fy - p.y)


def transform(obj: GeoObject, f: Callable[[Point], Point], reverses: bool) -> GeoObject:
    """Image of `obj` under the point map `f` (an isometry; `reverses` if it flips orientation)."""
    if isinstance(obj, Point):
        return f(obj)
    if isinstance(obj, Segment):
        return Segment(f(obj.a), f(obj.b))
    if isinstance(obj, Ray):
        return Ray(f(obj.origin), f(obj.through))
    if isinstance(obj, Line):
        return Line(f(obj.p), f(obj.q))
    if isinstance(obj, Circle):
        return Circle(f(obj.center), obj.radius)
    if isinstance(obj, Vector):
        return Vector(f(obj.start), f(obj.end))
    if isinstance(obj, Polygon):
        return Polygon(tuple(f(v) for v in obj.vertices))
    if isinstance(obj, Arc):
        center = f(obj.center)
        ends = [f(arc_point(obj, angle)) for angle in (obj.start, obj.end)]
        start, end = (math.atan2(e.y - center.y, e.x - center.x) for e in ends)
        # A reflection turns a counter-clockwise arc clockwise: swap its ends to keep it ccw.
        return (
            Arc(center, obj.radius, end, start) if reverses else Arc(center, obj.radius, start, end)
        )
    raise DSLFailure("bad_overload", f"a {kind_name(obj)} cannot be transformed")


def arc_point(arc: Arc, angle: float) -> Point:
    """The point at `angle` radians on the circle carrying `arc`."""
    return Point(
        arc.center.x + arc.radius * math.cos(angle), arc.center.y + arc.radius * math.sin(angle)
    )


def tangent_points(p: Point, circle: Circle, names: Sequence[str]) -> list[Point]:
    """Where tangents from `p` touch `circle`: one point if `p` is on it, else two.

    The first touches on the left of the direction from `p` to the centre.
    """
    d = p.distance(circle.center)
    r = circle.radius
    if d < r * (1 - TOUCH_REL):
        raise DSLFailure(
            "geometric",
            f"tangent: {names[0]} lies inside circle {names[1]} ({d:g} from the centre, radius "
            f"{r:g}), so no tangent passes through it",
        )
    if d <= r * (1 + TOUCH_REL):
        return [p]
    # Touch points seen from the centre: at angle +-acos(r/d) from the direction to p.
    base = math.atan2(p.y - circle.center.y, p.x - circle.center.x)
    spread = math.acos(r / d)
    return [
        arc_point(Arc(circle.center, r, 0.0, 0.0), base - spread),
        arc_point(Arc(circle.center, r, 0.0, 0.0), base + spread),
    ]


def regular_polygon(a: Point, b: Point, n: int) -> list[Point]:
    """All n vertices of the counter-clockwise regular n-gon with consecutive vertices a, b."""
    step = TAU / n
    vertices = [a, b]
    for _ in range(n - 2):
        prev, last = vertices[-2], vertices[-1]
        # Each next vertex: the previous one turned about the last by the interior angle.
        vertices.append(rotate_point(prev, last, -(math.pi - step)))
    return vertices


def shoelace(vertices: Sequence[Point]) -> float:
    """Signed area (positive when counter-clockwise)."""
    total = 0.0
    for i, v in enumerate(vertices):
        w = vertices[(i + 1) % len(vertices)]
        total += v.x * w.y - w.x * v.y
    return total / 2


def distance_to_line(p: Point, lin: Linear) -> float:
    """Distance from p to the full line carrying a line, ray or segment."""
    base, dx, dy, _, _ = carrier(lin)
    return abs(cross(dx, dy, p.x - base.x, p.y - base.y)) / math.hypot(dx, dy)
