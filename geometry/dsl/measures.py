"""Realisers of the measuring commands: distances, areas, arithmetic, const, equality.

Split from `realisers.py` to keep modules readable; `commands.py` lists both in one table.
"""

from __future__ import annotations

import math

from geometry.dsl import constructions as geo
from geometry.dsl.errors import DSLFailure
from geometry.dsl.expressions import Number
from geometry.dsl.overloads import Call, Result, as_number
from geometry.dsl.scene import Arc, Circle, Line, Point, Polygon, Ray, Segment
from geometry.dsl.tolerances import lengths_close, ratio_close


# -- measures and arithmetic -------------------------------------------------------
def distance(call: Call) -> list[Result]:
    """`distance : A B`: the length |AB|."""
    return [Number(call.point(0).distance(call.point(1)))]


def distance_to_line(call: Call) -> list[Result]:
    """`distance : P l`: the distance from P to the line, ray or segment l."""
    lin = call.args[1]
    assert isinstance(lin, Line | Segment | Ray)
    return [Number(geo.distance_to_line(call.point(0), lin))]


def length(call: Call) -> list[Result]:
    """`length : s`: the length of segment s."""
    return [as_number(call.args[0])]


def radius(call: Call) -> list[Result]:
    """`radius`: the radius of a circle or arc."""
    obj = call.args[0]
    assert isinstance(obj, Circle | Arc)
    return [Number(obj.radius)]


def center(call: Call) -> list[Result]:
    """`center`: the centre point of a circle or arc."""
    obj = call.args[0]
    assert isinstance(obj, Circle | Arc)
    return [obj.center]


def _vertices(call: Call) -> list[Point]:
    first = call.args[0]
    if isinstance(first, Polygon):
        return list(first.vertices)
    return [call.point(i) for i in range(len(call.args))]


def area(call: Call) -> list[Result]:
    """`area`: the area of a circle, of a polygon, or of the polygon with the given vertices."""
    obj = call.args[0]
    if isinstance(obj, Circle):
        return [Number(math.pi * obj.radius**2)]
    return [Number(abs(geo.shoelace(_vertices(call))))]


def perimeter(call: Call) -> list[Result]:
    """`perimeter`: the circumference of a circle, or the perimeter of a polygon or vertex list."""
    obj = call.args[0]
    if isinstance(obj, Circle):
        return [Number(geo.TAU * obj.radius)]
    pts = _vertices(call)
    return [Number(sum(p.distance(pts[(i + 1) % len(pts)]) for i, p in enumerate(pts)))]


def _pair(call: Call) -> tuple[Number, Number]:
    return call.number(0), call.number(1)


def arith_sum(call: Call) -> list[Result]:
    """`sum : a b`: a + b, an angle only when both are angles."""
    a, b = _pair(call)
    return [Number(a.value + b.value, a.is_angle and b.is_angle)]


def arith_minus(call: Call) -> list[Result]:
    """`minus : a b`: a - b, an angle only when both are angles."""
    a, b = _pair(call)
    return [Number(a.value - b.value, a.is_angle and b.is_angle)]


def arith_negate(call: Call) -> list[Result]:
    """`minus : a`: -a, keeping whether it is an angle."""
    a = call.number(0)
    return [Number(-a.value, a.is_angle)]


def arith_product(call: Call) -> list[Result]:
    """`product : a b`: a * b, an angle when exactly one factor is."""
    a, b = _pair(call)
    return [Number(a.value * b.value, a.is_angle != b.is_angle)]


def arith_ratio(call: Call) -> list[Result]:
    """`ratio : a b`: a / b, an angle for angle / plain number; b = 0 is a geometric failure."""
    a, b = _pair(call)
    if b.value == 0:
        raise DSLFailure("geometric", f"ratio: division by zero ({call.labels[1]} is 0)")
    return [Number(a.value / b.value, a.is_angle and not b.is_angle)]


def const(call: Call) -> list[Result]:
    """`const`: the number as given; radians for `AngleSize`, and `int` rejects a fraction."""
    value = call.number(0)
    if call.const_type == "AngleSize":  # the public executor's radian constants
        return [Number(value.value, is_angle=True)]
    if call.const_type == "int" and value.value != int(value.value):
        raise DSLFailure("bad_overload", f"const int needs a whole number; got {value.value:g}")
    return [value]


def equality_numbers(call: Call) -> list[Result]:
    """`equality : a b`: 1 if the two numbers are equal within tolerance, else 0."""
    a, b = _pair(call)
    return [Number(1.0 if ratio_close(a.value, b.value) else 0.0)]


def equality_points(call: Call) -> list[Result]:
    """`equality : A B`: 1 if the two points coincide within tolerance, else 0."""
    a, b = call.point(0), call.point(1)
    return [Number(1.0 if lengths_close(a.distance(b), 0.0, geo.scale_of(a, b)) else 0.0)]


def prove(call: Call) -> list[Result]:
    """`prove`: accepted for compatibility with the public DSL; computes and stores nothing."""
    return [None]


def zero_or_one(call: Call) -> tuple[int, ...]:
    """Output counts for `prove`: no output or one (never stored)."""
    return (0, 1)
