"""The public GeoBuildBench validator's condition tests, on a figure in its window.

Written from the facts of `src/dsl/dsl_validator.py` and `src/core/commands.py` at
ooongs/GeoBuildBench 5a31908 (no code taken over). Every test runs in *window* units (see
public_figure.py) with the public tolerances:

- "exact" tests use numpy's isclose (relative 1e-5, absolute 1e-8): parallel and
  perpendicular (unit normals equal up to sign), equal segments and equal angles, a point on
  a line or circle, concyclic (the cross ratio's imaginary part isclose 0, a quantity in
  window units to the fourth power, so its outcome depends on the window scale);
- collinear tests are numpy's matrix rank of [A-B, A-C] <= 1;
- absolute 1e-2 window units (`TOLERANCE`): point on segment (|AP| + |PB| - |AB|), midpoint,
  circle centres, tangency, and most length comparisons; only `distance_equals`, `length`
  and the segment ratio convert back to program units (divide by the window scale);
- angle values within 1 degree (either the angle or its reflex), angle sums within 2 degrees.

Defects kept because they decide verdicts (each documented where it is reproduced):
`perimeter` compares the *window* figure's perimeter with the stated value, so it passes only
when the figure happens to be drawn at that size in the window; a point placed with
12-digit coordinates on a segment can miss `point_on_segment`'s 1e-2 window units after the
rescale; a line required by two points is the first drawn line, segment or ray through both,
so a point on line AB fails `point_on_line` when AB was drawn as a segment and the point lies
beyond it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from geometry.dsl.public_figure import (
    PCircle,
    PLine,
    PPoint,
    PublicFigure,
    Vec,
    isclose,
)

TOLERANCE = 1e-2  # the public DSLValidator's default tolerance, in window units

Data = Mapping[str, Any]


class _Fail(Exception):
    """A test that cannot run (a label absent, a malformed entry): the condition fails."""


class Checker:
    """The public tests on one fitted figure."""

    def __init__(self, figure: PublicFigure) -> None:
        self.figure = figure
        self.objects = figure.objects

    # -- lookups, with the public element-dictionary semantics -------------------------

    def pt(self, label: Any) -> Vec:
        """Point `label`; an unhashable label raises (as the public dict lookup does)."""
        if label not in self.objects:
            raise _Fail(f"no {label}")
        obj = self.objects[label]
        if not isinstance(obj, PPoint):
            raise _Fail(f"{label} is not a point")
        return obj.a

    def find_line(self, a: Any, b: Any) -> PLine | None:
        """The first drawn line, segment or ray (program order) through points a and b."""
        pa, pb = self.pt(a), self.pt(b)
        for obj in self.objects.values():
            if isinstance(obj, PLine) and obj.contains(pa) and obj.contains(pb):
                return obj
        return None

    def line(self, data: Any) -> PLine:
        """A line named "l", ["l"], or by two points [A, B] (found drawn, else through them)."""
        if isinstance(data, str) or (isinstance(data, list) and len(data) == 1):
            label = data if isinstance(data, str) else data[0]
            obj = self.objects.get(label) if label in self.objects else None
            if isinstance(obj, PLine):
                return obj
            raise _Fail("no line")
        if isinstance(data, list) and len(data) == 2:
            if data[0] not in self.objects or data[1] not in self.objects:
                raise _Fail("no line points")
            found = self.find_line(data[0], data[1])
            return found if found is not None else line_through(self.pt(data[0]), self.pt(data[1]))
        raise _Fail("bad line")

    def circles_at(self, center: Any) -> list[PCircle]:
        """Every circle (arcs included) whose centre is within TOLERANCE of point `center`."""
        if center not in self.objects or not isinstance(self.objects[center], PPoint):
            return []
        c = self.pt(center)
        return [
            obj
            for obj in self.objects.values()
            if isinstance(obj, PCircle) and np.allclose(obj.c, c, atol=TOLERANCE)
        ]

    def pts(self, labels: Any) -> list[Vec]:
        """Points for every label (all must be present first, then all must be points)."""
        for label in labels:
            if label not in self.objects:
                raise _Fail("missing point")
        return [self.pt(label) for label in labels]


def line_through(a: Vec, b: Vec) -> PLine:
    """The public line_pp."""
    if not (a != b).any():
        raise ValueError("line through identical points")  # an error there, not "no line"
    normal = np.array(((a - b)[1], -(a - b)[0]))
    return PLine(normal, float(np.dot(a, normal)))


def angle(p1: Vec, vertex: Vec, p3: Vec) -> float:
    """The public angle_ppp: the counter-clockwise angle from vertex-p1 to vertex-p3 in [0, 2pi)."""
    v1, v2 = vertex - p1, vertex - p3
    z1, z2 = complex(*v1), complex(*v2)
    if isclose(abs(z1), 0) or isclose(abs(z2), 0):
        return 0.0
    value = float(np.angle(z2 / z1))
    return value + 2 * np.pi if value < 0 else value


def collinear(a: Vec, b: Vec, c: Vec) -> bool:
    """The public are_collinear_ppp: numpy's matrix rank of [a-b, a-c] at most 1."""
    return int(np.linalg.matrix_rank(np.array([a - b, a - c]))) <= 1


def parallel(l1: PLine, l2: PLine) -> bool:
    """Unit normals isclose, up to sign."""
    return bool(np.isclose(l1.n, l2.n).all() or np.isclose(l1.n, -l2.n).all())


def perpendicular(l1: PLine, l2: PLine) -> bool:
    """One normal isclose the other's direction, up to sign."""
    return bool(np.isclose(l1.n, l2.v).all() or np.isclose(l1.n, -l2.v).all())


def congruent(a1: float, a2: float) -> bool:
    """The public are_congruent_aa: equal or opposite oriented angles (isclose, mod 2pi)."""
    return isclose((a1 - a2 + 1) % (2 * np.pi), 1) or isclose((a1 + a2 + 1) % (2 * np.pi), 1)


def dist(a: Vec, b: Vec) -> float:
    """Euclidean distance."""
    return float(np.linalg.norm(a - b))


def between(p: Vec, a: Vec, b: Vec) -> bool:
    """|AP| + |PB| within TOLERANCE (window units) of |AB|."""
    return abs(dist(a, p) + dist(p, b) - dist(a, b)) <= TOLERANCE


# -- the tests, one per public condition type ----------------------------------------


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
    except _Fail:
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


def _quad_sides(pts: list[Vec]) -> tuple[bool, list[float]]:
    a, b, c, e = pts
    par = parallel(line_through(a, b), line_through(c, e)) and parallel(
        line_through(b, c), line_through(e, a)
    )
    return par, [dist(a, b), dist(b, c), dist(c, e), dist(e, a)]


def _sides_equal(sides: list[float]) -> bool:
    return all(abs(sides[i] - sides[i + 1]) <= TOLERANCE for i in range(3))


def _right_corner(pts: list[Vec]) -> bool:
    # TOLERANCE read as degrees here (np.radians(1e-2)): the public rectangle/square test.
    return abs(abs(angle(pts[3], pts[0], pts[1])) - np.pi / 2) <= np.radians(TOLERANCE)


def _polygon_property(ch: Checker, d: Data) -> bool:
    polygon, kind = d.get("polygon", []), d.get("property", "").lower()
    if len(polygon) < 3:
        return False
    pts = ch.pts(polygon)
    if kind not in ("parallelogram", "rectangle", "rhombus", "square") or len(pts) != 4:
        return False
    par, sides = _quad_sides(pts)
    if kind == "parallelogram":
        return par
    if kind == "rectangle":
        return par and _right_corner(pts)
    if kind == "rhombus":
        return par and _sides_equal(sides)
    return _sides_equal(sides) and _right_corner(pts)


def _regular_polygon(ch: Checker, d: Data) -> bool:
    labels = d.get("polygon_points", [])
    if len(labels) < 3 or len(labels) != d.get("sides", len(labels)):
        return False
    pts = ch.pts(labels)
    n = len(pts)
    sides = [dist(pts[i], pts[(i + 1) % n]) for i in range(n)]
    mean = sum(sides) / n
    expected = (n - 2) * 180 / n
    corners = [float(np.degrees(angle(pts[i - 1], pts[i], pts[(i + 1) % n]))) for i in range(n)]
    return all(abs(s - mean) <= TOLERANCE for s in sides) and all(
        abs(a - expected) <= TOLERANCE for a in corners
    )


def _order_on_line(ch: Checker, d: Data) -> bool:
    labels = d.get("points", [])
    if len(labels) < 3:
        return False
    pts = ch.pts(labels)
    if not all(collinear(pts[i], pts[i + 1], pts[i + 2]) for i in range(len(pts) - 2)):
        return False
    if d.get("line"):
        line = ch.line(d["line"])
        if not all(line.contains(p) for p in pts):
            return False
    gaps = [dist(pts[0], p) for p in pts]
    return all(gaps[i] <= gaps[i + 1] for i in range(len(gaps) - 1))


def _perimeter(ch: Checker, d: Data) -> bool:
    labels = d.get("polygon", [])
    if len(labels) < 3:
        return False
    pts = ch.pts(labels)
    n = len(pts)
    total = sum(dist(pts[i], pts[(i + 1) % n]) for i in range(n))
    # Public defect, kept: the window figure's perimeter against the stated value (no
    # division by the window scale), so a correct figure passes only by chance.
    return abs(total - d.get("value", 0)) <= d.get("tolerance", TOLERANCE)


def _point_incenter(ch: Checker, d: Data) -> bool:
    point, triangle = d.get("point"), d.get("triangle", [])
    if not point or len(triangle) != 3:
        return False
    p, a, b, c = ch.pts([point, *triangle])

    def to_line(x: Vec, y: Vec) -> float:
        na, nb = y[1] - x[1], x[0] - y[0]
        nc = y[0] * x[1] - x[0] * y[1]
        return float(abs(na * p[0] + nb * p[1] + nc) / np.sqrt(na**2 + nb**2))

    d1, d2, d3 = to_line(a, b), to_line(b, c), to_line(c, a)
    return abs(d1 - d2) <= TOLERANCE and abs(d2 - d3) <= TOLERANCE


def _point_on_arc(ch: Checker, d: Data) -> bool:
    point, arc = d.get("point"), d.get("arc", [])
    if not point or len(arc) < 2:
        return False
    p, a, b = ch.pts([point, arc[0], arc[1]])
    d1, d2 = p - a, p - b
    # The 2-D cross product of the two chord normals (-d1y, d1x) x (-d2y, d2x).
    if abs(float(d1[1] * d2[0] - d1[0] * d2[1])) < 1e-10:
        return False
    # The public "centre" is the mean of two chord midpoints, not the circumcentre.
    center = ((a + p) / 2 + (b + p) / 2) / 2
    r1, r2, r3 = dist(p, center), dist(a, center), dist(b, center)
    return abs(r1 - r2) <= TOLERANCE and abs(r2 - r3) <= TOLERANCE


def _wrap(diff: float) -> float:
    while diff > np.pi:
        diff -= 2 * np.pi
    while diff < -np.pi:
        diff += 2 * np.pi
    return diff


def _midpoint_of_arc(ch: Checker, d: Data) -> bool:
    point, arc = d.get("point"), d.get("arc", [])
    if not point or len(arc) < 2:
        return False
    p, a, b = ch.pts([point, arc[0], arc[1]])
    circle = next(
        (
            c
            for c in ch.objects.values()
            if isinstance(c, PCircle)
            and all(abs(dist(x, c.c) - c.r) <= TOLERANCE for x in (p, a, b))
        ),
        None,
    )
    if circle is None:
        return False
    t1, t2, t3 = (float(np.arctan2(*(x - circle.c)[::-1])) for x in (a, p, b))
    first, second, total = _wrap(t2 - t1), _wrap(t3 - t2), _wrap(t3 - t1)
    if not (np.sign(first) == np.sign(total) and np.sign(second) == np.sign(total)):
        first = -first if first != 0 else 2 * np.pi + first
        second = -second if second != 0 else 2 * np.pi + second
    return abs(abs(first) - abs(second)) <= np.radians(TOLERANCE)


def _point_outside_line(ch: Checker, d: Data) -> bool:
    point, line_data = d.get("point"), d.get("line")
    if not point or not line_data:
        return False
    p = ch.pt(point)
    try:
        line = ch.line(line_data)
    except _Fail:
        return True  # the public test: "Line not found, assuming outside"
    return not line.contains(p)


def _point_above_line(ch: Checker, d: Data) -> bool:
    point, line_data = d.get("point"), d.get("line")
    if not point or not line_data:
        return False
    p = ch.pt(point)
    line = ch.line(line_data)
    signed = float(np.dot(line.n, p)) - line.c
    return signed > 0 if line.n[1] > 0 else signed < 0


def _on_object(ch: Checker, p: Vec, obj: Any) -> bool | None:
    """Whether p is on a line or circle named by `obj`; None when `obj` names neither."""
    if isinstance(obj, list) and len(obj) == 2:
        try:
            return ch.line(obj).contains(p)
        except _Fail:
            return None
    if isinstance(obj, str) and obj in ch.objects:
        found = ch.objects[obj]
        if isinstance(found, PLine):
            return found.contains(p)
        if isinstance(found, PCircle):
            return abs(dist(p, found.c) - found.r) <= TOLERANCE
    return None


def _intersection(ch: Checker, d: Data) -> bool:
    points, objects = d.get("points", []), d.get("objects", [])
    for label in points:
        if label not in ch.objects:
            return False
    if len(objects) < 2 or not points:
        return True
    kinds = [obj for obj in objects[:2] if _names_line_or_circle(ch, obj)]
    if len(kinds) != 2:
        return True
    for label in points:
        found = ch.objects[label]
        if not isinstance(found, PPoint):
            continue
        if sum(bool(_on_object(ch, found.a, obj)) for obj in kinds) < 2:
            return False
    return True


def _names_line_or_circle(ch: Checker, obj: Any) -> bool:
    if isinstance(obj, list) and len(obj) == 2:
        try:
            ch.line(obj)
        except _Fail:
            return False
        return True
    return (
        isinstance(obj, str) and obj in ch.objects and isinstance(ch.objects[obj], PLine | PCircle)
    )


def _point_intersection(ch: Checker, d: Data) -> bool:
    point, objects = d.get("point"), d.get("objects", [])
    if not point:
        return False
    p = ch.pt(point)
    if len(objects) < 2:
        return True
    for obj in objects:
        if isinstance(obj, dict):
            on = False
            if "circle_center" in obj and obj["circle_center"] in ch.objects:
                circles = ch.circles_at(obj["circle_center"])
                on = bool(circles) and abs(dist(p, circles[0].c) - circles[0].r) <= TOLERANCE
        else:
            on = bool(_on_object(ch, p, obj))
        if not on:
            return False
    return True


def _transformation(ch: Checker, d: Data) -> bool:
    pre, img = d.get("preimage_points", []), d.get("image_points", [])
    if d.get("preimage_triangle") and d.get("image_triangle"):
        pre, img = d["preimage_triangle"], d["image_triangle"]
    if len(pre) != len(img) or not pre:
        return False
    center = d.get("center")
    for label in list(pre) + list(img) + ([center] if center else []):
        if label not in ch.objects:
            return False
    pre_pts, img_pts = ch.pts(pre), ch.pts(img)
    if d.get("transformation", "rotation") != "rotation":
        return True  # the public test passes every other transformation
    if not center:
        return False
    c = ch.pt(center)
    if any(abs(dist(c, x) - dist(c, y)) > TOLERANCE for x, y in zip(pre_pts, img_pts, strict=True)):
        return False
    if len(pre_pts) < 2:
        return True

    def turn(x: Vec, y: Vec) -> float:
        raw = float(np.arctan2(*(y - c)[::-1]) - np.arctan2(*(x - c)[::-1]))
        return float(np.arctan2(np.sin(raw), np.cos(raw)))

    first = turn(pre_pts[0], img_pts[0])
    return all(
        abs(first - turn(x, y)) <= np.radians(TOLERANCE)
        for x, y in zip(pre_pts[1:], img_pts[1:], strict=True)
    )


def _right_triangle(ch: Checker, d: Data) -> bool:
    points = d.get("points", [])
    if d.get("polygons"):
        points = d["polygons"][0]
    if len(points) != 3:
        return False
    a, b, c = ch.pts(points)
    return any(
        abs(float(np.degrees(angle(x, y, z))) - 90) <= 2.0
        for x, y, z in ((c, a, b), (a, b, c), (b, c, a))
    )


CHECKS: dict[str, Callable[[Checker, Data], bool]] = {
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
    "right_triangle": _right_triangle,
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
    "polygon_property": _polygon_property,
    "regular_polygon": _regular_polygon,
    "order_on_line": _order_on_line,
    "perimeter": _perimeter,
    "point_incenter": _point_incenter,
    "point_on_arc": _point_on_arc,
    "midpoint_of_arc": _midpoint_of_arc,
    "point_outside_line": _point_outside_line,
    "point_above_line": _point_above_line,
    "intersection": _intersection,
    "point_intersection": _point_intersection,
    "geometric_transformation": _transformation,
    "rotation": _transformation,
    "contact": lambda ch, d: True,
}


def check_condition(checker: Checker, condition: Mapping[str, Any]) -> bool:
    """Whether one raw data-set condition holds by the public test of its type.

    A type the public validator does not know fails; a test that raises (a label absent, an
    entry of the wrong shape) fails, as the public validator turns any exception into a
    failed condition.
    """
    check = CHECKS.get(str(condition.get("type")))
    if check is None:
        return False
    data = {k: v for k, v in condition.items() if k != "type"}
    try:
        return bool(check(checker, data))
    except Exception:  # noqa: BLE001 - the public validator fails a condition on any error
        return False
