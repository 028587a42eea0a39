"""Exact plane geometry on rational coordinates (`fractions.Fraction`).

Predicates (collinear, parallel, right angle, triangle type) are exact sign tests, so
generators never mislabel a figure by rounding. Quantities that are irrational (lengths,
perimeters, inradii) come back as one float computed from exact squares, and stay Fraction
whenever the square is a perfect square.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from geometry.thresholds import Degenerate

Coord = Fraction | int
Point = tuple[Coord, Coord]
ExactPoint = tuple[Fraction, Fraction]
Number = Fraction | float

AXES = ("x", "y", "y=x", "y=-x")


def exact(p: Point) -> ExactPoint:
    """`p` with Fraction coordinates.

    >>> exact((1, 2))
    (Fraction(1, 1), Fraction(2, 1))
    """
    return Fraction(p[0]), Fraction(p[1])


def sub(a: Point, b: Point) -> ExactPoint:
    """The vector a - b."""
    return Fraction(a[0]) - b[0], Fraction(a[1]) - b[1]


def cross(u: Point, v: Point) -> Fraction:
    """The z-component of u x v (u, v vectors)."""
    return Fraction(u[0]) * v[1] - Fraction(u[1]) * v[0]


def dot(u: Point, v: Point) -> Fraction:
    """The dot product of vectors u and v."""
    return Fraction(u[0]) * v[0] + Fraction(u[1]) * v[1]


def area2(a: Point, b: Point, c: Point) -> Fraction:
    """Twice the signed area of triangle abc: > 0 counter-clockwise, 0 collinear.

    >>> area2((0, 0), (4, 0), (0, 3)), area2((0, 0), (0, 3), (4, 0)), area2((0, 0), (1, 1), (2, 2))
    (Fraction(12, 1), Fraction(-12, 1), Fraction(0, 1))
    """
    return cross(sub(b, a), sub(c, a))


def is_collinear(*pts: Point) -> bool:
    """Whether all points lie on one line; coincident points count as collinear.

    >>> is_collinear((0, 0), (1, 1), (3, 3)), is_collinear((0, 0), (1, 1), (3, 2))
    (True, False)
    >>> is_collinear((2, 2), (2, 2), (5, -1)), is_collinear((1, 1)), is_collinear()
    (True, True, True)
    """
    if not pts:
        return True
    first = pts[0]
    # The line is fixed by the first point that differs from `first`; before it, any
    # number of copies of `first` are trivially on every line.
    second = next((p for p in pts if exact(p) != exact(first)), None)
    if second is None:
        return True
    return all(area2(first, second, p) == 0 for p in pts)


def midpoint(a: Point, b: Point) -> ExactPoint:
    """The midpoint of ab.

    >>> midpoint((1, 2), (4, -2))
    (Fraction(5, 2), Fraction(0, 1))
    """
    return (Fraction(a[0]) + b[0]) / 2, (Fraction(a[1]) + b[1]) / 2


def dist2(a: Point, b: Point) -> Fraction:
    """The squared distance |ab|^2.

    >>> dist2((0, 0), (3, 4)), dist2((2, 2), (2, 2))
    (Fraction(25, 1), Fraction(0, 1))
    """
    dx, dy = sub(a, b)
    return dx * dx + dy * dy


def exact_sqrt(q: Fraction) -> Number:
    """sqrt(q): a Fraction when q is the square of a rational, else the nearest float.

    >>> exact_sqrt(Fraction(9, 4)), exact_sqrt(Fraction(2)) == math.sqrt(2)
    (Fraction(3, 2), True)
    >>> exact_sqrt(Fraction(-1))
    Traceback (most recent call last):
    ValueError: square root of negative -1
    """
    if q < 0:
        raise ValueError(f"square root of negative {q}")
    num, den = math.isqrt(q.numerator), math.isqrt(q.denominator)
    if num * num == q.numerator and den * den == q.denominator:
        return Fraction(num, den)
    # Numerator and denominator separately: exact inputs, one rounding in the division.
    return math.sqrt(q.numerator) / math.sqrt(q.denominator)


def length(a: Point, b: Point) -> Number:
    """|ab|, exact when it is rational.

    >>> length((0, 0), (3, 4)), round(length((0, 0), (1, 1)), 6)
    (Fraction(5, 1), 1.414214)
    """
    return exact_sqrt(dist2(a, b))


def add_numbers(values: Sequence[Number]) -> Number:
    """The sum, exact if every term is a Fraction, else an accurately rounded float.

    >>> add_numbers([Fraction(1, 2), Fraction(1, 3)]), add_numbers([0.1, 0.2, Fraction(1)])
    (Fraction(5, 6), 1.3)
    """
    if all(isinstance(v, Fraction) for v in values):
        return sum((Fraction(v) for v in values), Fraction(0))
    return math.fsum(float(v) for v in values)


def polygon_area2(pts: Sequence[Point]) -> Fraction:
    """Twice the signed shoelace area of a polygon (counter-clockwise positive).

    >>> polygon_area2([(0, 0), (4, 0), (4, 3), (0, 3)]), polygon_area2([(0, 0), (1, 1)])
    (Fraction(24, 1), Fraction(0, 1))
    """
    n = len(pts)
    return sum((cross(pts[i], pts[(i + 1) % n]) for i in range(n)), Fraction(0))


def polygon_area(pts: Sequence[Point]) -> Fraction:
    """The (unsigned) area of a simple polygon.

    >>> polygon_area([(0, 0), (0, 3), (4, 3), (4, 0)])
    Fraction(12, 1)
    """
    return abs(polygon_area2(pts)) / 2


def perimeter(pts: Sequence[Point]) -> Number:
    """The perimeter of a closed polygon, exact when every side is rational.

    >>> perimeter([(0, 0), (3, 0), (3, 4)]), round(perimeter([(0, 0), (1, 0), (0, 1)]), 6)
    (Fraction(12, 1), 3.414214)
    """
    n = len(pts)
    return add_numbers([length(pts[i], pts[(i + 1) % n]) for i in range(n)])


def triangle_area(a: Point, b: Point, c: Point) -> Fraction:
    """The area of triangle abc (0 if collinear).

    >>> triangle_area((0, 0), (4, 0), (0, 3)), triangle_area((0, 0), (2, 2), (4, 4))
    (Fraction(6, 1), Fraction(0, 1))
    """
    return abs(area2(a, b, c)) / 2


def _require_triangle(a: Point, b: Point, c: Point) -> None:
    if area2(a, b, c) == 0:
        raise Degenerate(f"points {a}, {b}, {c} are collinear: not a triangle")


def is_parallel(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Whether lines ab and cd have the same direction (coincident lines included).

    >>> is_parallel((0, 0), (2, 1), (0, 1), (4, 3)), is_parallel((0, 0), (2, 1), (0, 1), (4, 2))
    (True, False)
    >>> is_parallel((0, 0), (2, 1), (4, 2), (6, 3))
    True
    """
    return cross(sub(b, a), sub(d, c)) == 0


def is_perpendicular(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Whether directions ab and cd are perpendicular.

    >>> is_perpendicular((0, 0), (2, 1), (5, 5), (4, 7))
    True
    >>> is_perpendicular((0, 0), (2, 1), (0, 0), (1, 2))
    False
    """
    return dot(sub(b, a), sub(d, c)) == 0


def is_right_angle(a: Point, b: Point, c: Point) -> bool:
    """Whether angle abc (at b) is exactly 90 degrees.

    >>> is_right_angle((3, 0), (0, 0), (0, 5)), is_right_angle((3, 1), (0, 0), (0, 5))
    (True, False)
    """
    return dot(sub(a, b), sub(c, b)) == 0


def angle_deg(a: Point, b: Point, c: Point) -> float:
    """The angle abc at b in degrees, in [0, 180] (used only for thresholds).

    >>> round(angle_deg((1, 0), (0, 0), (0, 1)), 9), round(angle_deg((1, 1), (0, 0), (2, 2)), 9)
    (90.0, 0.0)
    """
    u, v = sub(a, b), sub(c, b)
    return math.degrees(math.atan2(abs(float(cross(u, v))), float(dot(u, v))))


def line_angle_deg(a: Point, b: Point, c: Point, d: Point) -> float:
    """The acute angle between lines ab and cd in degrees, in [0, 90].

    >>> round(line_angle_deg((0, 0), (1, 0), (0, 0), (-1, 1)), 9)
    45.0
    """
    u, v = sub(b, a), sub(d, c)
    return math.degrees(math.atan2(abs(float(cross(u, v))), abs(float(dot(u, v)))))


def line_intersection(a: Point, b: Point, c: Point, d: Point) -> ExactPoint | None:
    """Where lines ab and cd meet; None when they are parallel or the same line.

    >>> line_intersection((2, 1), (3, 0), (-8, -1), (9, 0))
    (Fraction(10, 3), Fraction(-1, 3))
    >>> line_intersection((0, 0), (1, 1), (0, 1), (2, 3)) is None
    True
    >>> line_intersection((0, 0), (0, 0), (0, 1), (2, 3))
    Traceback (most recent call last):
    geometry.thresholds.Degenerate: line through (0, 0) and (0, 0) is undefined
    """
    for p, q in ((a, b), (c, d)):
        if exact(p) == exact(q):
            raise Degenerate(f"line through {p} and {q} is undefined")
    u, v = sub(b, a), sub(d, c)
    denom = cross(u, v)
    if denom == 0:
        return None
    t = cross(sub(c, a), v) / denom
    return Fraction(a[0]) + t * u[0], Fraction(a[1]) + t * u[1]


def foot_of_perpendicular(p: Point, a: Point, b: Point) -> ExactPoint:
    """The foot of the perpendicular from p to line ab.

    >>> foot_of_perpendicular((1, 3), (0, 0), (4, 0)), foot_of_perpendicular((0, 2), (0, 0), (2, 2))
    ((Fraction(1, 1), Fraction(0, 1)), (Fraction(1, 1), Fraction(1, 1)))
    """
    u = sub(b, a)
    norm = dot(u, u)
    if norm == 0:
        raise Degenerate(f"line through {a} and {b} is undefined")
    t = dot(sub(p, a), u) / norm
    return Fraction(a[0]) + t * u[0], Fraction(a[1]) + t * u[1]


def reflect(p: Point, axis: str) -> ExactPoint:
    """The mirror image of p across "x" (the x-axis), "y", "y=x" or "y=-x".

    >>> [reflect((2, -3), axis) for axis in AXES] == [(2, 3), (-2, -3), (-3, 2), (3, -2)]
    True
    """
    x, y = exact(p)
    images = {"x": (x, -y), "y": (-x, y), "y=x": (y, x), "y=-x": (-y, -x)}
    if axis not in images:
        raise ValueError(f"unknown axis {axis!r}; valid: {', '.join(AXES)}")
    return images[axis]


def rotate(p: Point, angle: int) -> ExactPoint:
    """p rotated about the origin by `angle` degrees counter-clockwise (a multiple of 90).

    >>> rotate((2, 1), 90), rotate((2, 1), -90) == rotate((2, 1), 270), rotate((2, 1), 360)
    ((Fraction(-1, 1), Fraction(2, 1)), True, (Fraction(2, 1), Fraction(1, 1)))
    >>> rotate((2, 1), 45)
    Traceback (most recent call last):
    ValueError: rotation angle 45 is not a multiple of 90 degrees
    """
    if angle % 90:
        raise ValueError(f"rotation angle {angle} is not a multiple of 90 degrees")
    x, y = exact(p)
    for _ in range((angle // 90) % 4):
        x, y = -y, x
    return x, y


def circumcenter(a: Point, b: Point, c: Point) -> ExactPoint:
    """The centre of the circle through a, b, c.

    >>> circumcenter((0, 0), (4, 0), (0, 2))
    (Fraction(2, 1), Fraction(1, 1))
    >>> circumcenter((0, 0), (1, 1), (2, 2))
    Traceback (most recent call last):
    geometry.thresholds.Degenerate: points (0, 0), (1, 1), (2, 2) are collinear: not a triangle
    """
    _require_triangle(a, b, c)
    ab, ac = sub(b, a), sub(c, a)
    d = 2 * cross(ab, ac)
    ab2, ac2 = dot(ab, ab), dot(ac, ac)
    ux = (ac[1] * ab2 - ab[1] * ac2) / d
    uy = (ab[0] * ac2 - ac[0] * ab2) / d
    return Fraction(a[0]) + ux, Fraction(a[1]) + uy


def incenter(a: Point, b: Point, c: Point) -> tuple[Number, Number]:
    """The centre of the inscribed circle: vertices weighted by the opposite side lengths.

    >>> incenter((0, 0), (4, 0), (0, 3))
    (Fraction(1, 1), Fraction(1, 1))
    >>> [round(v, 6) for v in incenter((0, 0), (2, 0), (0, 2))]
    [0.585786, 0.585786]
    """
    _require_triangle(a, b, c)
    wa, wb, wc = length(b, c), length(c, a), length(a, b)
    total = add_numbers([wa, wb, wc])
    if isinstance(total, Fraction):
        return (
            (wa * a[0] + wb * b[0] + wc * c[0]) / total,
            (wa * a[1] + wb * b[1] + wc * c[1]) / total,
        )
    weights = [float(wa), float(wb), float(wc)]
    xs = math.fsum(w * float(p[0]) for w, p in zip(weights, (a, b, c), strict=True))
    ys = math.fsum(w * float(p[1]) for w, p in zip(weights, (a, b, c), strict=True))
    return xs / total, ys / total


def inradius(a: Point, b: Point, c: Point) -> Number:
    """The radius of the inscribed circle: 2 * area / perimeter.

    >>> inradius((0, 0), (4, 0), (0, 3)), round(inradius((0, 0), (2, 0), (0, 2)), 6)
    (Fraction(1, 1), 0.585786)
    """
    _require_triangle(a, b, c)
    per = perimeter([a, b, c])
    twice_area = abs(area2(a, b, c))
    return twice_area / per if isinstance(per, Fraction) else float(twice_area) / per


def bisector_foot(a: Point, b: Point, c: Point) -> tuple[Number, Number]:
    """Where the bisector of angle abc meets side ac (AD : DC = BA : BC).

    >>> bisector_foot((0, 3), (0, 0), (4, 0))
    (Fraction(12, 7), Fraction(12, 7))
    >>> [round(v, 6) for v in bisector_foot((0, 1), (0, 0), (1, 1))]
    [0.414214, 1.0]
    """
    _require_triangle(a, b, c)
    ratio = exact_sqrt(dist2(b, a) / dist2(b, c))  # BA / BC, rational iff a perfect square
    if isinstance(ratio, Fraction):
        t: Number = ratio / (1 + ratio)
        return Fraction(a[0]) + t * (c[0] - a[0]), Fraction(a[1]) + t * (c[1] - a[1])
    t = ratio / (1 + ratio)
    return float(a[0]) + t * float(c[0] - a[0]), float(a[1]) + t * float(c[1] - a[1])


def triangle_type(a: Point, b: Point, c: Point) -> str:
    """ "acute", "right" or "obtuse", by comparing squared sides exactly.

    >>> triangle_type((0, 0), (4, 0), (0, 3)), triangle_type((0, 0), (4, 0), (2, 3))
    ('right', 'acute')
    >>> triangle_type((0, 0), (4, 0), (5, 1)), triangle_type((0, 0), (1, 0), (2, 0))
    Traceback (most recent call last):
    geometry.thresholds.Degenerate: points (0, 0), (1, 0), (2, 0) are collinear: not a triangle
    """
    _require_triangle(a, b, c)
    s1, s2, s3 = sorted((dist2(b, c), dist2(c, a), dist2(a, b)))
    if s1 + s2 == s3:
        return "right"
    return "acute" if s1 + s2 > s3 else "obtuse"


def max_angle_deg(pts: Sequence[Point]) -> float:
    """The largest interior angle of a triangle, in degrees (for thresholds)."""
    a, b, c = pts
    return max(angle_deg(c, a, b), angle_deg(a, b, c), angle_deg(b, c, a))


def min_angle_deg(pts: Sequence[Point]) -> float:
    """The smallest angle between consecutive sides of a closed polygon, in degrees.

    >>> round(min_angle_deg([(0, 0), (4, 0), (0, 4)]), 9)
    45.0
    """
    n = len(pts)
    return min(angle_deg(pts[i - 1], pts[i], pts[(i + 1) % n]) for i in range(n))


def segments_cross(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Whether closed segments ab and cd share a point (touching counts).

    >>> segments_cross((0, 0), (2, 2), (0, 2), (2, 0))
    True
    >>> segments_cross((0, 0), (1, 1), (2, 2), (3, 3))
    False
    >>> segments_cross((0, 0), (2, 0), (2, 0), (3, 5))
    True
    """

    def on_segment(p: Point, q: Point, r: Point) -> bool:
        return min(p[0], q[0]) <= r[0] <= max(p[0], q[0]) and min(p[1], q[1]) <= r[1] <= max(
            p[1], q[1]
        )

    d1, d2 = area2(c, d, a), area2(c, d, b)
    d3, d4 = area2(a, b, c), area2(a, b, d)
    if ((d1 > 0 > d2) or (d1 < 0 < d2)) and ((d3 > 0 > d4) or (d3 < 0 < d4)):
        return True
    return (
        (d1 == 0 and on_segment(c, d, a))
        or (d2 == 0 and on_segment(c, d, b))
        or (d3 == 0 and on_segment(a, b, c))
        or (d4 == 0 and on_segment(a, b, d))
    )


def is_simple_polygon(pts: Sequence[Point]) -> bool:
    """Whether the closed polygon has distinct vertices and no self-intersection.

    >>> is_simple_polygon([(0, 0), (2, 0), (2, 2), (0, 2)])
    True
    >>> is_simple_polygon([(0, 0), (2, 2), (2, 0), (0, 2)])
    False
    """
    n = len(pts)
    if n < 3 or len({exact(p) for p in pts}) < n or polygon_area2(pts) == 0:
        return False
    edges = [(pts[i], pts[(i + 1) % n]) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or (i == 0 and j == n - 1):
                # Neighbouring edges share a vertex; they only fail if they fold back.
                p, q, r = edges[i][0], edges[i][1], edges[j][1]
                if j != i + 1:
                    p, q, r = edges[j][0], edges[j][1], edges[i][1]
                if area2(p, q, r) == 0 and dot(sub(p, q), sub(r, q)) > 0:
                    return False
                continue
            if segments_cross(*edges[i], *edges[j]):
                return False
    return True


def is_symmetric_about_y_axis(pts: Sequence[Point]) -> bool:
    """Whether the closed polygon maps onto itself (as a cycle of vertices) under x -> -x.

    >>> is_symmetric_about_y_axis([(-2, 0), (2, 0), (1, 3), (-1, 3)])
    True
    >>> is_symmetric_about_y_axis([(-2, 0), (2, 0), (1, 3), (-2, 3)])
    False
    """
    cycle = [exact(p) for p in pts]
    mirrored = [reflect(p, "y") for p in cycle]
    n = len(cycle)
    # The mirror reverses orientation, so compare with every rotation of both directions.
    for candidate in (mirrored, mirrored[::-1]):
        for shift in range(n):
            if candidate[shift:] + candidate[:shift] == cycle:
                return True
    return False
