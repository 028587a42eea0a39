"""Realisers of the public DSL's predicate commands (`are_parallel`, `touches`, ...) and `power`.

A predicate binds its output label to a number, 1 when the relation holds and 0 when it does
not, as `equality` does: the public executor's Boolean reads as 1.0/0.0 wherever a number is
expected, and nothing is ever evaluated from a string. Relations are judged with the
validator's tolerances (geometry.dsl.tolerances), relative to the size of the objects
involved, so a construction that is exact up to float rounding reads as true.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from geometry.dsl import constructions as geo
from geometry.dsl.errors import DSLFailure
from geometry.dsl.expressions import Number
from geometry.dsl.overloads import Arg, Call, Result
from geometry.dsl.scene import Angle, Arc, Circle, Line, Point, Ray, Segment
from geometry.dsl.tolerances import ANGLE_DEG, LENGTH_REL, figure_scale, ratio_close

Linear = Line | Segment | Ray
Round = Circle | Arc


def _truth(holds: bool) -> list[Result]:
    return [Number(1.0 if holds else 0.0)]


def _defining_points(obj: Arg) -> list[Point]:
    """Points fixing an object's position and size, for the scale of a tolerance."""
    if isinstance(obj, Point):
        return [obj]
    if isinstance(obj, Segment):
        return [obj.a, obj.b]
    if isinstance(obj, Ray):
        return [obj.origin, obj.through]
    if isinstance(obj, Line):
        return [obj.p, obj.q]
    if isinstance(obj, Circle | Arc):
        c, r = obj.center, obj.radius
        return [Point(c.x - r, c.y - r), Point(c.x + r, c.y + r)]
    return []


def _tol(objects: Sequence[Arg]) -> float:
    """Length tolerance: LENGTH_REL of the size of the objects' defining points."""
    return LENGTH_REL * figure_scale(p for obj in objects for p in _defining_points(obj))


def _line_angle_deg(a: Linear, b: Linear) -> float:
    """The angle between the lines carrying a and b, in degrees, in [0, 90]."""
    ux, uy = geo.direction(a)
    vx, vy = geo.direction(b)
    angle = math.degrees(math.atan2(abs(geo.cross(ux, uy, vx, vy)), ux * vx + uy * vy))
    return min(angle, 180.0 - angle)


def _linear_args(call: Call) -> tuple[Linear, Linear]:
    a, b = call.args[0], call.args[1]
    assert isinstance(a, Line | Segment | Ray) and isinstance(b, Line | Segment | Ray)
    return a, b


def are_parallel(call: Call) -> list[Result]:
    """`are_parallel : l1 l2`: 1 when the carrying lines are parallel (or the same line)."""
    return _truth(_line_angle_deg(*_linear_args(call)) <= ANGLE_DEG)


def are_perpendicular(call: Call) -> list[Result]:
    """`are_perpendicular : l1 l2`: 1 when the carrying lines meet at right angles."""
    return _truth(_line_angle_deg(*_linear_args(call)) >= 90.0 - ANGLE_DEG)


def are_collinear(call: Call) -> list[Result]:
    """`are_collinear : A B C`: 1 when the three points lie on one line (coincident ones do)."""
    pts = [call.point(i) for i in range(3)]
    a, b = max(((p, q) for p in pts for q in pts), key=lambda pair: pair[0].distance(pair[1]))
    tol = _tol(pts)
    if a.distance(b) <= tol:
        return _truth(True)
    return _truth(all(geo.distance_to_line(p, Line(a, b)) <= tol for p in pts))


def are_concyclic(call: Call) -> list[Result]:
    """`are_concyclic : A B C D`: 1 when the four points lie on one circle (or one line).

    The cross ratio (A-C)(B-D) / ((A-D)(B-C)) of the points as complex numbers is real
    exactly then; its argument is a difference of inscribed angles, held to ANGLE_DEG.
    Two coincident points leave at most three, which always lie on a circle or line.
    """
    z = [complex(call.point(i).x, call.point(i).y) for i in range(4)]
    tol = _tol([call.point(i) for i in range(4)])
    if any(abs(z[i] - z[j]) <= tol for i in range(4) for j in range(i + 1, 4)):
        return _truth(True)
    cross_ratio = (z[0] - z[2]) * (z[1] - z[3]) / ((z[0] - z[3]) * (z[1] - z[2]))
    arg = abs(math.degrees(math.atan2(cross_ratio.imag, cross_ratio.real)))
    return _truth(min(arg, 180.0 - arg) <= ANGLE_DEG)


def _lies_on(point: Point, obj: Linear | Round, tol: float) -> bool:
    """Whether `point` is on the line, ray, segment, circle or arc (bounds respected)."""
    if isinstance(obj, Circle | Arc):
        if abs(point.distance(obj.center) - obj.radius) > tol:
            return False
        return isinstance(obj, Circle) or geo.on_arc(obj, point)
    if geo.distance_to_line(point, obj) > tol:
        return False
    base, dx, dy, lo, hi = geo.carrier(obj)
    length = math.hypot(dx, dy)
    t = ((point.x - base.x) * dx + (point.y - base.y) * dy) / (length * length)
    slack = tol / length
    return lo - slack <= t <= hi + slack


def _crossings(a: Linear | Round, b: Linear | Round) -> list[Point]:
    """Where the full line or circle carrying a meets that carrying b (none when they don't)."""
    full_a, full_b = _full(a), _full(b)
    names = ("first", "second")
    try:
        if isinstance(full_a, Line) and isinstance(full_b, Line):
            return [geo.intersect_linear(full_a, full_b, names)]
        if isinstance(full_a, Line) and isinstance(full_b, Circle):
            return geo.intersect_linear_round(full_a, full_b, names)
        if isinstance(full_a, Circle) and isinstance(full_b, Line):
            return geo.intersect_linear_round(full_b, full_a, names)
        assert isinstance(full_a, Circle) and isinstance(full_b, Circle)
        return geo.intersect_rounds(full_a, full_b, names)
    except DSLFailure:  # parallel, apart or concentric: no common point
        return []


def _full(obj: Linear | Round) -> Line | Circle:
    if isinstance(obj, Circle | Arc):
        return Circle(obj.center, obj.radius)
    base, dx, dy, _, _ = geo.carrier(obj)
    return Line(base, Point(base.x + dx, base.y + dy))


def are_concurrent(call: Call) -> list[Result]:
    """`are_concurrent : o1 o2 o3`: 1 when one point lies on all three lines/circles.

    The candidates are where the first two meet; segments, rays and arcs count only
    within their bounds, as the public command's `contains` does.
    """
    objs = [_curve(call.args[i]) for i in range(3)]
    tol = _tol(objs)
    return _truth(any(all(_lies_on(p, o, tol) for o in objs) for p in _crossings(*objs[:2])))


def _curve(arg: Arg) -> Linear | Round:
    assert isinstance(arg, Line | Segment | Ray | Circle | Arc)  # the overload's kinds
    return arg


def are_congruent_angles(call: Call) -> list[Result]:
    """`are_congruent : a1 a2` (angles): 1 when the two angles are equal."""
    a, b = call.args[0], call.args[1]
    assert isinstance(a, Angle) and isinstance(b, Angle)
    return _truth(abs(math.degrees(a.value - b.value)) <= ANGLE_DEG)


def are_congruent_segments(call: Call) -> list[Result]:
    """`are_congruent : s1 s2` (segments): 1 when the two segments are equally long."""
    a, b = call.args[0], call.args[1]
    assert isinstance(a, Segment) and isinstance(b, Segment)
    return _truth(abs(a.a.distance(a.b) - b.a.distance(b.b)) <= _tol([a, b]))


def are_complementary(call: Call) -> list[Result]:
    """`are_complementary : a1 a2`: 1 when the angles sum to 180° (as in the public command,
    which despite its name tests supplementary angles)."""
    a, b = call.args[0], call.args[1]
    assert isinstance(a, Angle) and isinstance(b, Angle)
    return _truth(abs(math.degrees(a.value + b.value) - 180.0) <= ANGLE_DEG)


def contained_by(call: Call) -> list[Result]:
    """`contained_by : P o`: 1 when P lies on the line, ray, segment, circle or arc o."""
    point, obj = call.point(0), call.args[1]
    assert isinstance(obj, Line | Segment | Ray | Circle | Arc)
    return _truth(_lies_on(point, obj, _tol([point, obj])))


def touches(call: Call) -> list[Result]:
    """`touches`: 1 when two circles are tangent (inside or outside), or a line (the one
    carrying a segment or ray) is tangent to a circle."""
    a, b = call.args[0], call.args[1]
    tol = _tol([a, b])
    if isinstance(a, Circle) and isinstance(b, Circle):
        d = a.center.distance(b.center)
        return _truth(
            abs(d - (a.radius + b.radius)) <= tol or abs(d - abs(a.radius - b.radius)) <= tol
        )
    circle, lin = (a, b) if isinstance(a, Circle) else (b, a)
    assert isinstance(circle, Circle) and isinstance(lin, Line | Segment | Ray)
    return _truth(abs(geo.distance_to_line(circle.center, lin) - circle.radius) <= tol)


def power(call: Call) -> list[Result]:
    """`power : x n`: x raised to the power n; a result that is not a real number fails."""
    base, exponent = call.number(0).value, call.number(1).value
    if base == 0 and exponent < 0:
        raise DSLFailure("geometric", f"power: 0 to a negative power ({exponent:g})")
    if base < 0 and exponent != int(exponent):
        raise DSLFailure(
            "geometric",
            f"power: a negative number ({base:g}) to a fractional power ({exponent:g}) is "
            "not a real number",
        )
    try:
        value = math.pow(base, exponent)
    except OverflowError:
        value = math.inf  # the executor reports the label as not finite
    return [Number(value)]


def are_equal_numbers(call: Call) -> list[Result]:
    """`are_equal : a b` (numbers): 1 when equal within the validator's ratio tolerance."""
    return _truth(ratio_close(call.number(0).value, call.number(1).value))


def are_equal_points(call: Call) -> list[Result]:
    """`are_equal : A B` (points): 1 when the points coincide."""
    a, b = call.point(0), call.point(1)
    return _truth(a.distance(b) <= LENGTH_REL * geo.scale_of(a, b))
