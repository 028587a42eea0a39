"""The public validator's tests of lines, points, angles, lengths and circles.

One function per public condition type (public_checks.py: sources, tolerances, defects).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from geometry.dsl.public_checker import (
    TOLERANCE,
    Checker,
    CheckFailed,
    Data,
    angle,
    between,
    collinear,
    congruent,
    dist,
    line_through,
    parallel,
    perpendicular,
)
from geometry.dsl.public_figure import PLine, PPoint, isclose


def _lines_pair(ch: Checker, d: Data, test: Callable[[PLine, PLine], bool]) -> bool:
    objects = d.get("objects", [])
    if len(objects) != 2:
        return False
    return test(ch.line(objects[0]), ch.line(objects[1]))


def _angle_value(ch: Checker, d: Data) -> bool:
    points = d.get("points", [])
    if len(points) != 1 or len(points[0]) != 3:
        return False
    deg = float(np.degrees(angle(*ch.pts(points[0]))))
    expected = d.get("value", 0) % 360.0
    tol = d.get("tolerance", 1.0)
    return min(abs(deg - expected), abs((360.0 - deg) % 360.0 - expected)) <= tol


def _angle_equality(ch: Checker, d: Data) -> bool:
    groups = d.get("points", [])
    if len(groups) < 2 or any(len(g) != 3 for g in groups):
        return False
    values = [angle(*ch.pts(g)) for g in groups]
    return all(congruent(values[i], values[i + 1]) for i in range(len(values) - 1))


def _segment_equality(ch: Checker, d: Data) -> bool:
    segments = d.get("segments", d.get("objects", []))
    if len(segments) < 2:
        return False
    ch.pts([p for seg in segments for p in seg])
    lengths = []
    for seg in segments:
        a, b = (ch.pt(p) for p in seg)  # a segment of other than two labels raises
        lengths.append(dist(a, b))
    # Compared in window units, exactly (isclose), whatever the message says.
    return all(isclose(lengths[i], lengths[i + 1]) for i in range(len(lengths) - 1))


def _collinear(ch: Checker, d: Data) -> bool:
    points = d.get("points", [])
    if len(points) < 3:
        return False
    if not collinear(*ch.pts(points[:3])):
        return False
    if d.get("line"):
        line = ch.line(d["line"])
        return all(line.contains(ch.pt(p)) for p in points)
    return True


def _not_collinear(ch: Checker, d: Data) -> bool:
    try:
        return not _collinear(ch, d)
    except CheckFailed:
        return True  # the public test negates the collinear test's failure, whatever its cause


def _concyclic(ch: Checker, d: Data) -> bool:
    points = d.get("points", [])
    if len(points) != 4:
        return False
    z1, z2, z3, z4 = (complex(*p) for p in ch.pts(points))
    cross = (z1 - z3) * (z2 - z4) * ((z1 - z4) * (z2 - z3)).conjugate()
    # An absolute 1e-8 on a window-units^4 quantity: decided by the window scale.
    return isclose(cross.imag, 0)


def _point_on_line(ch: Checker, d: Data) -> bool:
    if not d.get("point") or not d.get("line"):
        return False
    p = ch.pt(d["point"])
    return ch.line(d["line"]).contains(p)


def _circle_center(d: Data) -> Any:
    center = d.get("circle_center")
    circle = d.get("circle")
    if not center and circle is not None:
        center = (
            circle.get("center")
            if isinstance(circle, dict)
            else circle
            if isinstance(circle, str)
            else None
        )
    return center


def _point_on_circle(ch: Checker, d: Data) -> bool:
    point, center = d.get("point"), _circle_center(d)
    if not point or not center:
        return False
    if center not in ch.objects:
        return False
    p = ch.pt(point)
    return any(c.contains(p) for c in ch.circles_at(center))


def _angle_bisector(ch: Checker, d: Data) -> bool:
    line_data, corner = d.get("line"), d.get("angle_points", [])
    if not line_data or len(corner) != 3:
        return False
    vertex_label = corner[1]
    if vertex_label not in ch.objects:
        return False
    bisector = ch.line(line_data)
    vertex_obj = ch.objects[vertex_label]
    if not isinstance(vertex_obj, PPoint) or not bisector.contains(vertex_obj.a):
        return False
    p1, vertex, p3 = ch.pts(corner)
    through = None
    if isinstance(line_data, list) and len(line_data) == 2:
        for label in line_data:
            if label != vertex_label and label in ch.objects:
                through = ch.objects[label]
                break
    on_line = through.a if isinstance(through, PPoint) else vertex + bisector.v
    return congruent(angle(p1, vertex, on_line), angle(on_line, vertex, p3))


def _point_on_segment(ch: Checker, d: Data) -> bool:
    point, seg = d.get("point"), d.get("segment", [])
    if not point or len(seg) != 2:
        return False
    p, a, b = ch.pts([point, seg[0], seg[1]])
    # 1e-2 window units: a solver point 12 digits from the segment can miss it here.
    return collinear(p, a, b) and between(p, a, b)


def _midpoint_of(ch: Checker, d: Data) -> bool:
    point, seg = d.get("point"), d.get("segment")
    if seg is None:
        objects = d.get("objects", [])
        seg = objects[0] if objects else []
    if not point or len(seg) != 2:
        return False
    p, a, b = ch.pts([point, seg[0], seg[1]])
    return bool(np.allclose(p, (a + b) / 2, atol=TOLERANCE))


def _distance_equals(ch: Checker, d: Data) -> bool:
    seg = d.get("segment", [])
    if len(seg) != 2:
        return False
    a, b = ch.pts(seg)
    # The one length test that converts back to program units.
    return abs(dist(a, b) / ch.figure.scale - d.get("value", 0)) <= d.get("tolerance", TOLERANCE)


def _triangle_valid(ch: Checker, d: Data) -> bool:
    points = d.get("points", [])
    return len(points) == 3 and not collinear(*ch.pts(points))


def _angle_sum(ch: Checker, d: Data) -> bool:
    angles = d.get("angles", [])
    if len(angles) < 2:
        return False
    total = 0.0
    for item in angles:
        points = item.get("points", [])
        if len(points) != 3:
            return False
        total += float(np.degrees(angle(*ch.pts(points))))
    return abs(total - d.get("value", 0)) <= d.get("tolerance", 2.0)


def _isosceles(ch: Checker, d: Data) -> bool:
    points = d.get("points", [])
    if len(points) != 3:
        return False
    a, b, c = ch.pts(points)
    ab, bc, ca = dist(a, b), dist(b, c), dist(c, a)
    return min(abs(ab - bc), abs(bc - ca), abs(ca - ab)) <= TOLERANCE


def _angle_ratio(ch: Checker, d: Data) -> bool:
    first, second, ratio = d.get("angle1", []), d.get("angle2", []), d.get("ratio", [1, 1])
    if len(first) != 3 or len(second) != 3 or len(ratio) != 2:
        return False
    pts = ch.pts(first + second)
    a1 = float(np.degrees(angle(*pts[:3])))
    a2 = float(np.degrees(angle(*pts[3:])))
    best = float("inf")
    for x in (a1, (360.0 - a1) % 360.0):
        for y in (a2, (360.0 - a2) % 360.0):
            if y != 0:
                best = min(best, abs(x * ratio[1] - y * ratio[0]))
    return best <= d.get("tolerance", 1.0) * max(ratio)


def _perpendicular_bisector(ch: Checker, d: Data) -> bool:
    line_data, seg = d.get("line"), d.get("segment", [])
    if not line_data or len(seg) != 2:
        return False
    a, b = ch.pts(seg)
    line = ch.line(line_data)
    return line.contains((a + b) / 2) and perpendicular(line, line_through(a, b))


def _point_on_line_extension(ch: Checker, d: Data) -> bool:
    point, line_data = d.get("point"), d.get("line_segment", d.get("line"))
    if not point or not line_data:
        return False
    p = ch.pt(point)
    return ch.line(line_data).contains(p)


def _point_on_segment_extension(ch: Checker, d: Data) -> bool:
    point, seg = d.get("point"), d.get("segment", [])
    if not point or len(seg) != 2:
        return False
    p, a, b = ch.pts([point, seg[0], seg[1]])
    return collinear(p, a, b) and not between(p, a, b)


def _same_side(ch: Checker, d: Data) -> bool:
    points, line_data = d.get("points", []), d.get("line")
    if len(points) != 2 or not line_data:
        return False
    p, q = ch.pts(points)
    line = ch.line(line_data)
    return float((np.dot(line.n, p) - line.c) * (np.dot(line.n, q) - line.c)) > 0


def _point_inside_circle(ch: Checker, d: Data) -> bool:
    point, center, radius = d.get("point"), d.get("circle_center"), d.get("radius")
    if not point or not center:
        return False
    p, c = ch.pts([point, center])
    if radius is None:
        circles = ch.circles_at(center)
        if not circles:
            return False
        radius = circles[0].r
    return dist(p, c) < radius - TOLERANCE


def _tangent(ch: Checker, d: Data) -> bool:
    line_data = d.get("line")
    center = d.get("circle_center")
    circle = d.get("circle", {})
    if center is None and isinstance(circle, dict):
        center = circle.get("center")
    if not line_data or not center or center not in ch.objects:
        return False
    c = ch.pt(center)
    line = ch.line(line_data)
    circles = ch.circles_at(center)
    if not circles:
        return False
    return abs(abs(float(np.dot(line.n, c)) - line.c) - circles[0].r) <= TOLERANCE


def _tangent_at_point(ch: Checker, d: Data) -> bool:
    line_data, center = d.get("line"), d.get("circle_center")
    point = d.get("tangent_point", d.get("point"))
    if not line_data or not center or not point:
        return False
    return (
        _tangent(ch, {"line": line_data, "circle_center": center})
        and _point_on_circle(ch, {"point": point, "circle_center": center})
        and _point_on_line(ch, {"point": point, "line": line_data})
    )


def _diameter(ch: Checker, d: Data) -> bool:
    seg, center = d.get("segment", []), d.get("circle_center")
    if len(seg) != 2 or not center:
        return False
    a, b, c = ch.pts([seg[0], seg[1], center])
    circles = ch.circles_at(center)
    if not np.allclose(c, (a + b) / 2, atol=TOLERANCE) or not circles:
        return False
    r = circles[0].r
    return abs(dist(a, c) - r) <= TOLERANCE and abs(dist(b, c) - r) <= TOLERANCE


def _intersection_point(ch: Checker, d: Data) -> bool:
    point, lines = d.get("point"), d.get("lines", [])
    if not point or len(lines) != 2:
        return False
    p = ch.pt(point)
    return all(ch.line(line).contains(p) for line in lines)


LINE_CHECKS: dict[str, Callable[[Checker, Data], bool]] = {
    "parallel": lambda ch, d: _lines_pair(ch, d, parallel),
    "perpendicular": lambda ch, d: _lines_pair(ch, d, perpendicular),
    "angle_value": _angle_value,
    "angle_equality": _angle_equality,
    "segment_equality": _segment_equality,
    "segment_equal": _segment_equality,
    "collinear": _collinear,
    "not_collinear": _not_collinear,
    "concyclic": _concyclic,
    "point_on_line": _point_on_line,
    "point_on_circle": _point_on_circle,
    "angle_bisector": _angle_bisector,
    "point_on_segment": _point_on_segment,
    "point_between": lambda ch, d: _point_on_segment(
        ch, {"point": d.get("point"), "segment": d.get("endpoints", [])}
    ),
    "midpoint_of": _midpoint_of,
    "distance_equals": _distance_equals,
    "segment_length": _distance_equals,
    "length": _distance_equals,
    "triangle_valid": _triangle_valid,
    "angle_sum": _angle_sum,
    "isosceles_triangle": _isosceles,
    "angle_ratio": _angle_ratio,
    "perpendicular_bisector": _perpendicular_bisector,
    "point_on_line_extension": _point_on_line_extension,
    "point_on_segment_extension": _point_on_segment_extension,
    "same_side": _same_side,
    "point_inside_circle": _point_inside_circle,
    "tangent": _tangent,
    "tangent_at_point": _tangent_at_point,
    "diameter": _diameter,
    "intersection_point": _intersection_point,
}
