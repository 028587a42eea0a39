"""Residual builders for incidence, angle and length conditions (points, lines, angles).

A builder reads a normalised `Condition`, registers the unknowns it needs in the `Space`,
and returns a function of the `State` whose residuals are all zero exactly when the
condition holds. Lengths are divided by the figure's scale and angles are in radians, so
all residuals are of comparable size; inequalities are hinges with a margin (MARGIN of the
scale), so a solution satisfies them with room to spare under the validator's tolerance.
"""

from __future__ import annotations

import math

from geometry.dsl.conditions.model import Condition, LineRef
from geometry.dsl.solver_space import (
    MARGIN,
    ResidualFn,
    Space,
    State,
    angle,
    cos_between,
    cross,
    dist,
    dot,
    hinge,
    line_offset,
    mid,
    not_collinear,
    on_line,
    sin_between,
    sub,
    unit,
)


def angle_value(c: Condition, sp: Space) -> ResidualFn:
    """angle_value: the angle minus its target value, in radians."""
    labels, target = sp.labels(c.labels("angle")), math.radians(c.number("value"))
    return lambda s: [angle(*(s.pt(x) for x in labels)) - target]


def angle_equality(c: Condition, sp: Space) -> ResidualFn:
    """angle_equality: each listed angle minus the first."""
    groups = [sp.labels(g) for g in c.groups("angles")]

    def residual(s: State) -> list[float]:
        values = [angle(*(s.pt(x) for x in g)) for g in groups]
        return [v - values[0] for v in values[1:]]

    return residual


def angle_sum(c: Condition, sp: Space) -> ResidualFn:
    """angle_sum: the sum of the listed angles minus the target value, in radians."""
    groups = [sp.labels(g) for g in c.groups("angles")]
    target = math.radians(c.number("value"))
    return lambda s: [sum(angle(*(s.pt(x) for x in g)) for g in groups) - target]


def angle_ratio(c: Condition, sp: Space) -> ResidualFn:
    """angle_ratio: angle1 * r2 - angle2 * r1, scaled by the larger ratio term."""
    first, second = sp.labels(c.labels("angle1")), sp.labels(c.labels("angle2"))
    ratio = c.args["ratio"]
    assert isinstance(ratio, tuple) and len(ratio) == 2
    r1, r2 = float(ratio[0]), float(ratio[1])
    top = max(abs(r1), abs(r2), 1e-12)

    def residual(s: State) -> list[float]:
        a1 = angle(*(s.pt(x) for x in first))
        a2 = angle(*(s.pt(x) for x in second))
        return [(a1 * r2 - a2 * r1) / top]

    return residual


def angle_bisector(c: Condition, sp: Space) -> ResidualFn:
    """angle_bisector: the vertex's offset from the line and the line's turn off the bisector."""
    ref = sp.line(c.line("line"))
    p_label, v_label, q_label = sp.labels(c.labels("angle"))

    def residual(s: State) -> list[float]:
        p, v, q = s.pt(p_label), s.pt(v_label), s.pt(q_label)
        up, uq = unit(sub(p, v)), unit(sub(q, v))
        bisector = (up[0] + uq[0], up[1] + uq[1])
        if math.hypot(*bisector) < 1e-9:
            bisector = (-up[1], up[0])  # straight angle: the perpendicular bisects it
        a, b = s.line(ref)
        along = cross((0.0, 0.0), unit(sub(b, a)), unit(bisector))
        return [line_offset(v, a, b) / s.scale, along]

    return residual


def point_on_line(c: Condition, sp: Space) -> ResidualFn:
    """point_on_line: the point's signed offset from the line."""
    p, ref = sp.point(c.text("point")), sp.line(c.line("line"))
    return lambda s: [on_line(s, s.pt(p), ref)]


def point_outside_line(c: Condition, sp: Space) -> ResidualFn:
    """point_outside_line: a hinge keeping the point at least MARGIN off the line."""
    p, ref = sp.point(c.text("point")), sp.line(c.line("line"))
    return lambda s: [hinge(MARGIN - abs(on_line(s, s.pt(p), ref)))]


def point_above_line(c: Condition, sp: Space) -> ResidualFn:
    """point_above_line: hinges keeping the point MARGIN above a line that is not near vertical."""
    p, ref = sp.point(c.text("point")), sp.line(c.line("line"))

    def residual(s: State) -> list[float]:
        a, b = s.line(ref)
        # Left of a->b is above when the line runs rightwards; a vertical line has no above.
        rightwards = 1.0 if b[0] >= a[0] else -1.0
        slope_room = abs(unit(sub(b, a))[0])
        above = rightwards * line_offset(s.pt(p), a, b) / s.scale
        return [hinge(MARGIN - above), hinge(0.1 - slope_room)]

    return residual


def same_side(c: Condition, sp: Space) -> ResidualFn:
    """same_side: hinges keeping every point MARGIN off the line, on the first point's side."""
    labels, ref = sp.labels(c.labels("points")), sp.line(c.line("line"))

    def residual(s: State) -> list[float]:
        sides = [on_line(s, s.pt(x), ref) for x in labels]
        sign = 1.0 if sides[0] >= 0.0 else -1.0
        return [hinge(MARGIN - sign * side) for side in sides]

    return residual


def _position(s: State, p: str, seg: tuple[str, ...]) -> tuple[float, float, float]:
    """(offset from the segment's line / scale, fraction along it, its length / scale)."""
    a, b, q = s.pt(seg[0]), s.pt(seg[1]), s.pt(p)
    length = dist(a, b)
    t = dot(sub(q, a), sub(b, a)) / (length * length) if length > 0.0 else 0.0
    return line_offset(q, a, b) / s.scale, t, length / s.scale


def point_on_segment(c: Condition, sp: Space) -> ResidualFn:
    """point_on_segment: the offset from the segment's line, and hinges keeping it between ends."""
    p, seg = sp.point(c.text("point")), sp.labels(c.labels("segment"))

    def residual(s: State) -> list[float]:
        off, t, length = _position(s, p, seg)
        return [off, hinge(-t) * length, hinge(t - 1.0) * length]

    return residual


def point_on_extension(c: Condition, sp: Space) -> ResidualFn:
    """point_on_segment_extension: on the segment's line, at least MARGIN beyond either end."""
    p, seg = sp.point(c.text("point")), sp.labels(c.labels("segment"))

    def residual(s: State) -> list[float]:
        off, t, length = _position(s, p, seg)
        # Beyond either end (the data does not say which), by MARGIN at least.
        beyond = max(t - 1.0, -t) * length
        return [off, hinge(MARGIN - beyond)]

    return residual


def midpoint_of(c: Condition, sp: Space) -> ResidualFn:
    """midpoint_of: the point's x and y offsets from the segment's midpoint."""
    p, (a, b) = sp.point(c.text("point")), sp.labels(c.labels("segment"))

    def residual(s: State) -> list[float]:
        m, q = mid(s.pt(a), s.pt(b)), s.pt(p)
        return [(q[0] - m[0]) / s.scale, (q[1] - m[1]) / s.scale]

    return residual


def distance_equals(c: Condition, sp: Space) -> ResidualFn:
    """distance_equals: the segment's length, or the point-line distance, minus the value."""
    value = c.number("value")
    if "segment" in c.args:
        a, b = sp.labels(c.labels("segment"))
        return lambda s: [(dist(s.pt(a), s.pt(b)) - value) / s.scale]
    p, ref = sp.point(c.text("point")), sp.line(c.line("line"))
    return lambda s: [abs(on_line(s, s.pt(p), ref)) - value / s.scale]


def segment_equality(c: Condition, sp: Space) -> ResidualFn:
    """segment_equality: each listed segment's length minus the first's."""
    segments = [sp.labels(seg) for seg in c.groups("segments")]

    def residual(s: State) -> list[float]:
        lengths = [dist(s.pt(a), s.pt(b)) for a, b in segments]
        return [(v - lengths[0]) / s.scale for v in lengths[1:]]

    return residual


def perimeter(c: Condition, sp: Space) -> ResidualFn:
    """perimeter: the polygon's perimeter minus the value."""
    labels, value = sp.labels(c.labels("polygon")), c.number("value")

    def residual(s: State) -> list[float]:
        pts = [s.pt(x) for x in labels]
        total = sum(dist(pts[i - 1], pts[i]) for i in range(len(pts)))
        return [(total - value) / s.scale]

    return residual


def collinear(c: Condition, sp: Space) -> ResidualFn:
    """collinear: each point's offset from the given line, or from the line of the first two."""
    labels = sp.labels(c.labels("points"))
    ref = sp.line(c.line("line")) if "line" in c.args else LineRef(through=labels[:2])
    return lambda s: [on_line(s, s.pt(x), ref) for x in labels]


def not_collinear_condition(c: Condition, sp: Space) -> ResidualFn:
    """not_collinear: a hinge keeping the points at least MARGIN off a common line."""
    return not_collinear(sp.labels(c.labels("points")))


def isosceles_triangle(c: Condition, sp: Space) -> ResidualFn:
    """isosceles_triangle: a non-degenerate triangle with the given (or the closest) sides equal."""
    tri = sp.labels(c.labels("points"))
    shape = not_collinear(tri)
    if "equal_sides" in c.args:
        sides = [sp.labels(side) for side in c.groups("equal_sides")]
    else:
        sides = [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])]

    def residual(s: State) -> list[float]:
        lengths = [dist(s.pt(a), s.pt(b)) / s.scale for a, b in sides]
        if "equal_sides" in c.args:
            return shape(s) + [v - lengths[0] for v in lengths[1:]]
        # Any two sides equal: the closest pair is the one to pull together.
        gaps = [lengths[i] - lengths[j] for i, j in ((0, 1), (1, 2), (0, 2))]
        return shape(s) + [min(gaps, key=abs)]

    return residual


def order_on_line(c: Condition, sp: Space) -> ResidualFn:
    """order_on_line: collinear, consecutive points at least MARGIN apart in the listed order."""
    labels = sp.labels(c.labels("points"))
    ref = sp.line(c.line("line")) if "line" in c.args else LineRef(through=labels[:2])
    on_line = collinear(c, sp)

    def residual(s: State) -> list[float]:
        a, b = s.line(ref)
        direction = unit(sub(b, a))
        along = [dot(sub(s.pt(x), a), direction) / s.scale for x in labels]
        sign = 1.0 if along[-1] >= along[0] else -1.0
        steps = [sign * (q - p) for p, q in zip(along, along[1:], strict=False)]
        return on_line(s) + [hinge(MARGIN - step) for step in steps]

    return residual


def parallel(c: Condition, sp: Space) -> ResidualFn:
    """parallel: the sine of the angle between the first line and each other one."""
    refs = [sp.line(ref) for ref in c.lines("lines")]
    return lambda s: [sin_between(s, refs[0], ref) for ref in refs[1:]]


def perpendicular(c: Condition, sp: Space) -> ResidualFn:
    """perpendicular: the cosine of the angle between the first line and each other one."""
    refs = [sp.line(ref) for ref in c.lines("lines")]
    return lambda s: [cos_between(s, refs[0], ref) for ref in refs[1:]]


def perpendicular_bisector(c: Condition, sp: Space) -> ResidualFn:
    """perpendicular_bisector: the segment's midpoint on the line, and the two perpendicular."""
    ref = sp.line(c.line("line"))
    segment = LineRef(through=sp.labels(c.labels("segment")))

    def residual(s: State) -> list[float]:
        a, b = s.line(segment)
        return [on_line(s, mid(a, b), ref), cos_between(s, ref, segment)]

    return residual


def on_all_lines(c: Condition, sp: Space) -> ResidualFn:
    """intersection / intersection_point: each point's offset from each listed line."""
    labels = sp.labels(c.labels("points") if "points" in c.args else (c.text("point"),))
    refs = [sp.line(ref) for ref in c.lines("lines")]
    return lambda s: [on_line(s, s.pt(x), ref) for x in labels for ref in refs]
