"""Checks of incidence, angle and length conditions: points, lines, segments, angles.

Each check takes a normalised `Condition` and a `Figure` and returns (holds, reason); the
reason says what was measured against what was expected. Lengths are compared within the
figure's tolerance, angles within ANGLE_DEG.
"""

from __future__ import annotations

import math

from geometry.dsl.conditions.figure import (
    Figure,
    Unevaluable,
    angle_deg,
    distance_to_line,
    line_angle_deg,
    max_offset_from_line,
    projection,
    signed_side,
)
from geometry.dsl.conditions.model import Condition
from geometry.dsl.scene import Point
from geometry.dsl.tolerances import ANGLE_DEG, angles_close

Outcome = tuple[bool, str]


def fmt(value: float) -> str:
    """A measured number for reasons: 4 significant digits, no trailing zeros."""
    return f"{value:.4g}"


def _angle(fig: Figure, labels: tuple[str, ...]) -> float:
    a, v, b = (fig.point(label) for label in labels)
    return angle_deg(a, v, b)


def _name(labels: tuple[str, ...]) -> str:
    return "".join(labels)


def _length(fig: Figure, seg: tuple[str, ...]) -> float:
    return fig.point(seg[0]).distance(fig.point(seg[1]))


def check_angle_value(c: Condition, fig: Figure) -> Outcome:
    """angle_value: the angle measures `value` degrees, within ANGLE_DEG."""
    measured, expected = _angle(fig, c.labels("angle")), c.number("value")
    return angles_close(measured, expected), (
        f"angle {_name(c.labels('angle'))} is {measured:.1f}°, expected {expected:g}°"
    )


def check_angle_equality(c: Condition, fig: Figure) -> Outcome:
    """angle_equality: all listed angles are equal, within ANGLE_DEG."""
    angles = c.groups("angles")
    values = [_angle(fig, a) for a in angles]
    shown = ", ".join(f"{_name(a)}={v:.1f}°" for a, v in zip(angles, values, strict=True))
    holds = all(angles_close(v, values[0]) for v in values)
    return holds, f"angles {shown} {'are equal' if holds else 'differ'}"


def check_angle_sum(c: Condition, fig: Figure) -> Outcome:
    """angle_sum: the listed angles add up to `value` degrees, ANGLE_DEG slack per summand."""
    angles = c.groups("angles")
    total, expected = sum(_angle(fig, a) for a in angles), c.number("value")
    # Each summand may carry its own rounding error.
    holds = abs(total - expected) <= ANGLE_DEG * len(angles)
    names = " + ".join(_name(a) for a in angles)
    return holds, f"angles {names} sum to {total:.1f}°, expected {expected:g}°"


def check_angle_ratio(c: Condition, fig: Figure) -> Outcome:
    """angle_ratio: angle1 : angle2 is the given ratio r1 : r2."""
    first, second = _angle(fig, c.labels("angle1")), _angle(fig, c.labels("angle2"))
    ratio = c.args["ratio"]
    assert isinstance(ratio, tuple) and len(ratio) == 2
    r1, r2 = float(ratio[0]), float(ratio[1])
    # first : second = r1 : r2, compared as first * r2 vs second * r1 to avoid dividing by 0.
    holds = abs(first * r2 - second * r1) <= ANGLE_DEG * max(r1, r2)
    return holds, (
        f"angles {_name(c.labels('angle1'))}={first:.1f}° and {_name(c.labels('angle2'))}="
        f"{second:.1f}° are not in ratio {r1:g}:{r2:g}"
        if not holds
        else "ratio holds"
    )


def check_angle_bisector(c: Condition, fig: Figure) -> Outcome:
    """angle_bisector: the line passes through the vertex along the internal bisector."""
    p_label, v_label, q_label = c.labels("angle")
    p, v, q = fig.point(p_label), fig.point(v_label), fig.point(q_label)
    line = fig.line(c.line("line"))
    if distance_to_line(v, *line) > fig.tol:
        return False, f"vertex {v_label} is not on line {c.line('line')}"
    # Internal bisector direction: the sum of the unit arms (perpendicular to an arm for a
    # straight angle, where the sum vanishes).
    up, uq = _unit(v, p), _unit(v, q)
    bx, by = up[0] + uq[0], up[1] + uq[1]
    if math.hypot(bx, by) < 1e-9:
        bx, by = -up[1], up[0]
    off = line_angle_deg(line, (v, Point(v.x + bx, v.y + by)))
    angle_name = _name(c.labels("angle"))
    return off <= ANGLE_DEG, f"line {c.line('line')} is {off:.1f}° off the bisector of {angle_name}"


def _unit(origin: Point, to: Point) -> tuple[float, float]:
    d = origin.distance(to)
    if d == 0.0:
        raise Unevaluable("angle has a zero-length arm")
    return (to.x - origin.x) / d, (to.y - origin.y) / d


def check_point_on_line(c: Condition, fig: Figure) -> Outcome:
    """point_on_line: the point lies on the line, within the figure's tolerance."""
    p, line = fig.point(c.text("point")), fig.line(c.line("line"))
    d = distance_to_line(p, *line)
    return d <= fig.tol, f"{c.text('point')} is {fmt(d)} from line {c.line('line')}"


def check_point_outside_line(c: Condition, fig: Figure) -> Outcome:
    """point_outside_line: the point is farther than the tolerance from the line."""
    holds, _ = check_point_on_line(c, fig)
    return not holds, f"{c.text('point')} lies on line {c.line('line')}"


def check_point_above_line(c: Condition, fig: Figure) -> Outcome:
    """point_above_line: the point is strictly above a non-vertical line (greater y)."""
    p, (a, b) = fig.point(c.text("point")), fig.line(c.line("line"))
    if abs(b.x - a.x) <= fig.tol:
        return False, f"line {c.line('line')} is vertical: 'above' is undefined"
    # Figure coordinates have y pointing up, as drawn.
    line_y = a.y + (b.y - a.y) * (p.x - a.x) / (b.x - a.x)
    return p.y - line_y > fig.tol, f"{c.text('point')} is not above line {c.line('line')}"


def check_same_side(c: Condition, fig: Figure) -> Outcome:
    """same_side: all listed points lie strictly on one side of the line."""
    a, b = fig.line(c.line("line"))
    sides = [signed_side(fig.point(label), a, b) for label in c.labels("points")]
    holds = all(s > fig.tol for s in sides) or all(s < -fig.tol for s in sides)
    names = ", ".join(c.labels("points"))
    return holds, f"{names} are not strictly on one side of line {c.line('line')}"


def _segment_position(c: Condition, fig: Figure) -> tuple[float, float, float]:
    """(distance from the segment's line, position along it as a fraction, tolerance as a
    fraction of the segment's length)."""
    a_label, b_label = c.labels("segment")
    p, a, b = fig.point(c.text("point")), fig.point(a_label), fig.point(b_label)
    if a.distance(b) <= fig.tol:
        raise Unevaluable(f"segment {a_label}{b_label} has zero length")
    return distance_to_line(p, a, b), projection(p, a, b), fig.tol / a.distance(b)


def check_point_on_segment(c: Condition, fig: Figure) -> Outcome:
    """point_on_segment: the point is on the segment's line, between its ends."""
    d, t, slack = _segment_position(c, fig)
    seg = _name(c.labels("segment"))
    if d > fig.tol:
        return False, f"{c.text('point')} is {fmt(d)} from line {seg}"
    return -slack <= t <= 1 + slack, f"{c.text('point')} is on line {seg} but outside the segment"


def check_point_on_extension(c: Condition, fig: Figure) -> Outcome:
    """point_on_segment_extension / point_on_line_extension: on the line, beyond either end."""
    d, t, slack = _segment_position(c, fig)
    seg = _name(c.labels("segment"))
    if d > fig.tol:
        return False, f"{c.text('point')} is {fmt(d)} from line {seg}"
    # Either side: the data says "extension of BC" without fixing beyond which end.
    return t > 1 + slack or t < -slack, f"{c.text('point')} is not beyond the ends of {seg}"


def check_midpoint_of(c: Condition, fig: Figure) -> Outcome:
    """midpoint_of: the point is the midpoint of the segment."""
    a_label, b_label = c.labels("segment")
    p, a, b = fig.point(c.text("point")), fig.point(a_label), fig.point(b_label)
    mid = Point((a.x + b.x) / 2, (a.y + b.y) / 2)
    d = p.distance(mid)
    return d <= fig.tol, f"{c.text('point')} is {fmt(d)} from the midpoint of {a_label}{b_label}"


def check_distance_equals(c: Condition, fig: Figure) -> Outcome:
    """distance_equals: the segment's length, or the point's distance to the line, is `value`."""
    expected = c.number("value")
    if "line" in c.args:
        line = c.line("line")
        measured = distance_to_line(fig.point(c.text("point")), *fig.line(line))
        what = f"distance from {c.text('point')} to line {line}"
    else:
        measured, what = _length(fig, c.labels("segment")), _name(c.labels("segment"))
    return fig.same(measured, expected), f"{what} is {fmt(measured)}, expected {expected:g}"


def check_segment_equality(c: Condition, fig: Figure) -> Outcome:
    """segment_equality: all listed segments have the same length."""
    segments = c.groups("segments")
    lengths = [_length(fig, s) for s in segments]
    holds = all(fig.same(v, lengths[0]) for v in lengths)
    shown = ", ".join(f"{_name(s)}={fmt(v)}" for s, v in zip(segments, lengths, strict=True))
    return holds, f"lengths {shown} {'are equal' if holds else 'differ'}"


def check_perimeter(c: Condition, fig: Figure) -> Outcome:
    """perimeter: the polygon's perimeter is `value`."""
    pts = [fig.point(label) for label in c.labels("polygon")]
    total = sum(pts[i].distance(pts[(i + 1) % len(pts)]) for i in range(len(pts)))
    expected = c.number("value")
    name = _name(c.labels("polygon"))
    return fig.same(total, expected), f"perimeter of {name} is {fmt(total)}, expected {expected:g}"


def check_collinear(c: Condition, fig: Figure) -> Outcome:
    """collinear: the points lie on one line (the given line, if any)."""
    pts = [fig.point(label) for label in c.labels("points")]
    names = ", ".join(c.labels("points"))
    if "line" in c.args:
        line = fig.line(c.line("line"))
        off = max(distance_to_line(p, *line) for p in pts)
        return off <= fig.tol, f"{names} stray {fmt(off)} from line {c.line('line')}"
    off = max_offset_from_line(pts)
    return off <= fig.tol, f"{names} stray {fmt(off)} from a common line"


def check_not_collinear(c: Condition, fig: Figure) -> Outcome:
    """not_collinear: the points do not all lie on one line."""
    pts = [fig.point(label) for label in c.labels("points")]
    return max_offset_from_line(pts) > fig.tol, f"{', '.join(c.labels('points'))} are collinear"


def check_triangle_valid(c: Condition, fig: Figure) -> Outcome:
    """triangle_valid: the three vertices are not collinear."""
    holds, _ = check_not_collinear(c, fig)
    return holds, f"triangle {_name(c.labels('points'))} is degenerate (collinear vertices)"


def check_isosceles_triangle(c: Condition, fig: Figure) -> Outcome:
    """isosceles_triangle: the given sides are equal, or else some two sides are."""
    tri = c.labels("points")
    if not check_not_collinear(c, fig)[0]:
        return False, f"triangle {_name(tri)} is degenerate"
    if "equal_sides" in c.args:
        sides = c.groups("equal_sides")
    else:
        a, b, cc = tri
        sides = ((a, b), (b, cc), (cc, a))
    lengths = [_length(fig, s) for s in sides]
    shown = ", ".join(f"{_name(s)}={fmt(v)}" for s, v in zip(sides, lengths, strict=True))
    if "equal_sides" in c.args:
        return all(fig.same(v, lengths[0]) for v in lengths), f"sides {shown} differ"
    pairs = [(0, 1), (1, 2), (0, 2)]
    holds = any(fig.same(lengths[i], lengths[j]) for i, j in pairs)
    return holds, f"no two sides of {_name(tri)} are equal ({shown})"


def check_order_on_line(c: Condition, fig: Figure) -> Outcome:
    """order_on_line: the points are collinear and lie along the line in the listed order."""
    labels = c.labels("points")
    pts = [fig.point(label) for label in labels]
    holds, reason = check_collinear(c, fig)
    if not holds:
        return False, reason
    a, b = fig.line(c.line("line")) if "line" in c.args else (pts[0], pts[-1])
    if a.distance(b) <= fig.tol:
        return False, f"{labels[0]} and {labels[-1]} coincide"
    along = [projection(p, a, b) * a.distance(b) for p in pts]
    steps = [y - x for x, y in zip(along, along[1:], strict=False)]
    # Either direction along the line, but strictly monotone.
    holds = all(s > fig.tol for s in steps) or all(s < -fig.tol for s in steps)
    return holds, f"{', '.join(labels)} do not lie on the line in this order"


def _line_pairs(c: Condition, fig: Figure) -> list[tuple[str, float]]:
    refs = c.lines("lines")
    if len(refs) < 2:
        raise Unevaluable(f"{c.type} needs two lines, got {len(refs)}")
    first = fig.line(refs[0])
    return [(f"{refs[0]} and {ref}", line_angle_deg(first, fig.line(ref))) for ref in refs[1:]]


def check_parallel(c: Condition, fig: Figure) -> Outcome:
    """parallel: every listed line is parallel to the first, within ANGLE_DEG."""
    worst = max(_line_pairs(c, fig), key=lambda pair: pair[1])
    return worst[1] <= ANGLE_DEG, f"lines {worst[0]} meet at {worst[1]:.1f}°, expected parallel"


def check_perpendicular(c: Condition, fig: Figure) -> Outcome:
    """perpendicular: every listed line is perpendicular to the first, within ANGLE_DEG."""
    worst = max(_line_pairs(c, fig), key=lambda pair: abs(pair[1] - 90.0))
    pair, angle = worst
    return abs(angle - 90.0) <= ANGLE_DEG, f"lines {pair} meet at {angle:.1f}°, expected 90°"


def check_perpendicular_bisector(c: Condition, fig: Figure) -> Outcome:
    """perpendicular_bisector: the line is the perpendicular bisector of the segment."""
    a_label, b_label = c.labels("segment")
    line = fig.line(c.line("line"))
    holds = fig.is_perpendicular_bisector(line, fig.point(a_label), fig.point(b_label))
    return holds, f"line {c.line('line')} is not the perpendicular bisector of {a_label}{b_label}"


def check_on_all_lines(c: Condition, fig: Figure) -> Outcome:
    """intersection / intersection_point: the point(s) lie on every listed line."""
    labels = c.labels("points") if "points" in c.args else (c.text("point"),)
    for label in labels:
        p = fig.point(label)
        for ref in c.lines("lines"):
            d = distance_to_line(p, *fig.line(ref))
            if d > fig.tol:
                return False, f"{label} is {fmt(d)} from line {ref}"
    lines = " and ".join(str(ref) for ref in c.lines("lines"))
    return True, f"{', '.join(labels)} on {lines}"
