"""Checks of circle, polygon and transformation conditions.

Shapes are judged by distances and midpoints, never by the order or orientation the program
drew them in: a square listed A B C D passes whether A B C D runs clockwise or not.
"""

from __future__ import annotations

from geometry.dsl.conditions.checks_lines import Outcome, fmt
from geometry.dsl.conditions.figure import (
    Figure,
    Unevaluable,
    angle_deg,
    circumcircle,
    cross,
    distance_to_line,
    incenter,
    line_angle_deg,
    max_offset_from_line,
    rotate,
    signed_angle_deg,
)
from geometry.dsl.conditions.model import Condition
from geometry.dsl.scene import Circle, Point
from geometry.dsl.tolerances import ANGLE_DEG


def _off_circle(fig: Figure, p: Point, circles: list[Circle]) -> tuple[float, Circle]:
    """The smallest distance from p to one of the circles, and that circle."""
    return min(((abs(p.distance(k.center) - k.radius), k) for k in circles), key=lambda t: t[0])


def check_point_on_circle(c: Condition, fig: Figure) -> Outcome:
    """point_on_circle: the point lies on a circle of the figure centred at `center`."""
    p, center = fig.point(c.text("point")), c.text("center")
    off, circle = _off_circle(fig, p, fig.circles_at(center))
    return off <= fig.tol, (
        f"{c.text('point')} is {fmt(off)} from circle {center} (radius {fmt(circle.radius)})"
    )


def check_point_inside_circle(c: Condition, fig: Figure) -> Outcome:
    """point_inside_circle: the point is strictly inside radius `radius` (or the largest circle)
    about `center`."""
    p, center = fig.point(c.text("point")), c.text("center")
    d = p.distance(fig.point(center))
    if "radius" in c.args:
        radius = c.number("radius")
    else:
        radius = max(k.radius for k in fig.circles_at(center))
    return (
        d < radius - fig.tol,
        f"{c.text('point')} is {fmt(d)} from {center}, radius {fmt(radius)}",
    )


def check_point_intersection(c: Condition, fig: Figure) -> Outcome:
    """The point lies on each circle given as (centre, point on it)."""
    p = fig.point(c.text("point"))
    for center_label, through in c.groups("circles"):
        center = fig.point(center_label)
        radius = center.distance(fig.point(through))
        off = abs(p.distance(center) - radius)
        if off > fig.tol:
            return (
                False,
                f"{c.text('point')} is {fmt(off)} from circle {center_label} through {through}",
            )
    return True, "on every circle"


def check_concyclic(c: Condition, fig: Figure) -> Outcome:
    """concyclic: the points are not collinear and all lie on one circle."""
    labels = c.labels("points")
    pts = [fig.point(label) for label in labels]
    names = ", ".join(labels)
    if max_offset_from_line(pts) <= fig.tol:
        return False, f"{names} are collinear"
    # The circle through the three points spanning the largest triangle is the best
    # conditioned; every other point must lie on it.
    triples = [(a, b, k) for a in pts for b in pts for k in pts]
    a, b, k = max(triples, key=lambda t: abs(cross(*t)))
    circle = circumcircle(a, b, k)
    assert circle is not None
    center, radius = circle
    off = max(abs(p.distance(center) - radius) for p in pts)
    return off <= fig.tol, f"{names} stray {fmt(off)} from a common circle"


def check_diameter(c: Condition, fig: Figure) -> Outcome:
    """diameter: the centre is the segment's midpoint and its ends lie on that circle."""
    a_label, b_label = c.labels("segment")
    a, b, center = fig.point(a_label), fig.point(b_label), c.text("center")
    mid = Point((a.x + b.x) / 2, (a.y + b.y) / 2)
    if not fig.coincide(mid, fig.point(center)):
        return False, f"{center} is not the midpoint of {a_label}{b_label}"
    off, _ = _off_circle(fig, a, fig.circles_at(center))
    return off <= fig.tol, f"{a_label}{b_label} is not a chord of circle {center}"


def _tangent_circle(c: Condition, fig: Figure) -> tuple[float, Circle]:
    """How far the line is from touching the nearest circle centred at `center`."""
    line = fig.line(c.line("line"))
    center = c.text("center")
    d = distance_to_line(fig.point(center), *line)
    return min(((abs(d - k.radius), k) for k in fig.circles_at(center)), key=lambda t: t[0])


def check_tangent(c: Condition, fig: Figure) -> Outcome:
    """tangent: the line touches a circle centred at `center`."""
    off, _ = _tangent_circle(c, fig)
    return (
        off <= fig.tol,
        f"line {c.line('line')} misses tangency to circle {c.text('center')} by {fmt(off)}",
    )


def check_tangent_at_point(c: Condition, fig: Figure) -> Outcome:
    """tangent_at_point: the line touches the circle at the point, perpendicular to the radius."""
    t_label, center = c.text("point"), c.text("center")
    t, line = fig.point(t_label), fig.line(c.line("line"))
    if distance_to_line(t, *line) > fig.tol:
        return False, f"{t_label} is not on line {c.line('line')}"
    off, _ = _off_circle(fig, t, fig.circles_at(center))
    if off > fig.tol:
        return False, f"{t_label} is {fmt(off)} from circle {center}"
    radius_angle = line_angle_deg(line, (fig.point(center), t))
    return abs(radius_angle - 90.0) <= ANGLE_DEG, (
        f"line {c.line('line')} meets radius {center}{t_label} at {radius_angle:.1f}°, expected 90°"
    )


def _circle_through(fig: Figure, labels: tuple[str, ...]) -> Circle:
    pts = [fig.point(label) for label in labels]
    for obj in fig.scene.objects.values():
        if isinstance(obj, Circle) and all(
            abs(p.distance(obj.center) - obj.radius) <= fig.tol for p in pts
        ):
            return obj
    raise Unevaluable(f"no circle in the figure passes through {', '.join(labels)}")


def check_midpoint_of_arc(c: Condition, fig: Figure) -> Outcome:
    """midpoint_of_arc: the point, on a circle through the arc's ends, is equidistant from them."""
    m_label, (a_label, b_label) = c.text("point"), c.labels("arc")
    _circle_through(fig, (a_label, b_label, m_label))
    m = fig.point(m_label)
    da, db = m.distance(fig.point(a_label)), m.distance(fig.point(b_label))
    # Equal chords MA = MB on one circle: M halves one of the two arcs AB (the data does
    # not say which).
    return fig.same(da, db), f"{m_label}{a_label}={fmt(da)} and {m_label}{b_label}={fmt(db)} differ"


def check_point_on_arc(c: Condition, fig: Figure) -> Outcome:
    """point_on_arc: the point is on a circle through the arc's ends, on the major/minor arc if
    given."""
    p_label, (a_label, b_label) = c.text("point"), c.labels("arc")
    _circle_through(fig, (a_label, b_label, p_label))
    p, a, b = fig.point(p_label), fig.point(a_label), fig.point(b_label)
    if fig.coincide(p, a) or fig.coincide(p, b):
        return False, f"{p_label} coincides with an end of arc {a_label}{b_label}"
    kind = c.args.get("arc_type")
    if kind is None:
        return True, "on the arc"
    # Inscribed angle: from the major arc, chord AB subtends less than 90°.
    inscribed = angle_deg(a, p, b)
    holds = inscribed < 90.0 - ANGLE_DEG if kind == "major" else inscribed > 90.0 + ANGLE_DEG
    return holds, f"{p_label} is not on the {kind} arc {a_label}{b_label}"


def check_point_incenter(c: Condition, fig: Figure) -> Outcome:
    """point_incenter: the point is the incenter of the (non-degenerate) triangle."""
    a, b, k = (fig.point(label) for label in c.labels("triangle"))
    if max_offset_from_line([a, b, k]) <= fig.tol:
        return False, f"triangle {''.join(c.labels('triangle'))} is degenerate"
    d = fig.point(c.text("point")).distance(incenter(a, b, k))
    return d <= fig.tol, f"{c.text('point')} is {fmt(d)} from the incenter"


def _mid(p: Point, q: Point) -> Point:
    return Point((p.x + q.x) / 2, (p.y + q.y) / 2)


def check_polygon_property(c: Condition, fig: Figure) -> Outcome:
    """polygon_property: the quadrilateral is a `kind`: parallelogram, square, trapezoid, ..."""
    labels, kind = c.labels("polygon"), c.text("kind")
    p = [fig.point(label) for label in labels]
    name = "".join(labels)
    if max_offset_from_line(p) <= fig.tol:
        return False, f"{name} is degenerate"
    side = [p[i].distance(p[(i + 1) % 4]) for i in range(4)]
    diagonals_bisect = fig.coincide(_mid(p[0], p[2]), _mid(p[1], p[3]))
    equal_diagonals = fig.same(p[0].distance(p[2]), p[1].distance(p[3]))
    equal_sides = fig.same(side[0], side[1])
    parallel_pairs = [
        line_angle_deg((p[0], p[1]), (p[2], p[3])) <= ANGLE_DEG,
        line_angle_deg((p[1], p[2]), (p[3], p[0])) <= ANGLE_DEG,
    ]
    # Built from distances and midpoints only: orientation and starting vertex never matter.
    tests = {
        "parallelogram": diagonals_bisect,
        "rectangle": diagonals_bisect and equal_diagonals,
        "rhombus": diagonals_bisect and equal_sides,
        "square": diagonals_bisect and equal_diagonals and equal_sides,
        "trapezoid": any(parallel_pairs) and _convex(p),
        "isosceles_trapezoid": any(parallel_pairs) and _convex(p) and equal_diagonals,
    }
    sides = ", ".join(fmt(s) for s in side)
    return tests[kind], f"{name} is not a {kind} (sides {sides})"


def _convex(p: list[Point]) -> bool:
    turns = [cross(p[i], p[(i + 1) % len(p)], p[(i + 2) % len(p)]) for i in range(len(p))]
    return all(t > 0 for t in turns) or all(t < 0 for t in turns)


def check_regular_polygon(c: Condition, fig: Figure) -> Outcome:
    """regular_polygon: the polygon is convex with equal sides and equal angles."""
    labels = c.labels("polygon")
    p = [fig.point(label) for label in labels]
    n, name = len(p), "".join(labels)
    side = [p[i].distance(p[(i + 1) % n]) for i in range(n)]
    if not all(fig.same(s, side[0]) for s in side) or side[0] <= fig.tol:
        return False, f"{name} has unequal sides ({', '.join(fmt(s) for s in side)})"
    # Equal sides, convex, all angles equal <=> regular.
    angles = [angle_deg(p[i - 1], p[i], p[(i + 1) % n]) for i in range(n)]
    expected = 180.0 * (n - 2) / n
    holds = _convex(p) and all(abs(a - expected) <= ANGLE_DEG for a in angles)
    return (
        holds,
        f"{name} has angles {', '.join(f'{a:.1f}' for a in angles)}, expected {expected:.1f}",
    )


def check_rotation(c: Condition, fig: Figure) -> Outcome:
    """rotation: each image point is its preimage rotated by `angle` degrees about the centre."""
    center_label = c.text("center")
    center = fig.point(center_label)
    sign = 1.0 if c.text("direction") == "counterclockwise" else -1.0
    angle = c.number("angle")
    for src, dst in zip(c.labels("preimage"), c.labels("image"), strict=True):
        expected = rotate(fig.point(src), center, sign * angle)
        d = fig.point(dst).distance(expected)
        if d > fig.tol:
            return False, (
                f"{dst} is {fmt(d)} from {src} rotated {angle:g}° "
                f"{c.text('direction')} about {center_label}"
            )
    return True, "rotation holds"


def check_transformation(c: Condition, fig: Figure) -> Outcome:
    """geometric_transformation (rotation): one rotation about the centre, by an angle the
    data leaves open, maps every preimage point to its image."""
    center_label = c.text("center")
    center = fig.point(center_label)
    angles: list[float] = []
    for src, dst in zip(c.labels("preimage"), c.labels("image"), strict=True):
        s, d = fig.point(src), fig.point(dst)
        if fig.coincide(s, center):
            if not fig.coincide(d, center):
                return False, f"{src} is the centre but {dst} is not"
            continue
        if not fig.same(s.distance(center), d.distance(center)):
            return False, f"{center_label}{src} and {center_label}{dst} differ in length"
        angles.append(signed_angle_deg(s, center, d))
    if not angles:
        raise Unevaluable("every preimage point is the centre")
    spread = max(abs(_wrap(a - angles[0])) for a in angles)
    if spread > ANGLE_DEG:
        return False, f"points turn by different angles about {center_label}"
    if abs(angles[0]) <= ANGLE_DEG:
        return False, f"rotation about {center_label} by 0° maps the figure onto itself"
    return True, f"rotation by {angles[0]:.1f}°"


def _wrap(degrees: float) -> float:
    return (degrees + 180.0) % 360.0 - 180.0
