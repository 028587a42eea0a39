"""Residual builders for circle, polygon and transformation conditions (see solver_lines)."""

from __future__ import annotations

import math

from geometry.dsl.conditions.model import Condition, LineRef
from geometry.dsl.solver_space import (
    ANGLE_MARGIN,
    MARGIN,
    ResidualFn,
    Space,
    State,
    Vec,
    angle,
    cos_between,
    cross,
    dist,
    hinge,
    line_offset,
    mid,
    not_collinear,
    on_line,
    sin_between,
)


def _off_circles(s: State, p: str, center: str) -> float:
    """Distance / scale from p to the nearest circle centred at `center`."""
    d = dist(s.pt(p), s.pt(center))
    return min((d - r for r in s.radii(center)), key=abs) / s.scale


def point_on_circle(c: Condition, sp: Space) -> ResidualFn:
    """point_on_circle: the point's offset from the nearest circle about the centre."""
    p, center = sp.point(c.text("point")), sp.circle_at(c.text("center"))
    return lambda s: [_off_circles(s, p, center)]


def point_inside_circle(c: Condition, sp: Space) -> ResidualFn:
    """point_inside_circle: a hinge keeping the point MARGIN inside the given or largest radius."""
    p = sp.point(c.text("point"))
    given = c.number("radius") if "radius" in c.args else None
    center = sp.point(c.text("center")) if given is not None else sp.circle_at(c.text("center"))

    def residual(s: State) -> list[float]:
        radius = given if given is not None else max(s.radii(center))
        return [hinge(dist(s.pt(p), s.pt(center)) / s.scale - radius / s.scale + MARGIN)]

    return residual


def point_intersection(c: Condition, sp: Space) -> ResidualFn:
    """point_intersection: the point's offset from each circle given as (centre, point on it)."""
    p = sp.point(c.text("point"))
    circles = [sp.labels(pair) for pair in c.groups("circles")]

    def residual(s: State) -> list[float]:
        q = s.pt(p)
        return [(dist(q, s.pt(o)) - dist(s.pt(t), s.pt(o))) / s.scale for o, t in circles]

    return residual


def concyclic(c: Condition, sp: Space) -> ResidualFn:
    """concyclic: points not collinear, all equidistant from an auxiliary centre."""
    labels = sp.labels(c.labels("points"))
    center = sp.anchor(f"~concyclic.{'.'.join(labels)}")
    shape = not_collinear(labels)

    def residual(s: State) -> list[float]:
        o = s.pt(center)
        radii = [dist(s.pt(x), o) / s.scale for x in labels]
        return shape(s) + [r - radii[0] for r in radii[1:]]

    return residual


def diameter(c: Condition, sp: Space) -> ResidualFn:
    """diameter: the segment's midpoint at the centre, and its end on the circle."""
    a, b = sp.labels(c.labels("segment"))
    center = sp.circle_at(c.text("center"))

    def residual(s: State) -> list[float]:
        m, o = mid(s.pt(a), s.pt(b)), s.pt(center)
        return [(m[0] - o[0]) / s.scale, (m[1] - o[1]) / s.scale, _off_circles(s, a, center)]

    return residual


def _tangency(s: State, ref: LineRef, center: str) -> float:
    d = abs(line_offset(s.pt(center), *s.line(ref)))
    return min((d - r for r in s.radii(center)), key=abs) / s.scale


def tangent(c: Condition, sp: Space) -> ResidualFn:
    """tangent: how far the line is from touching the nearest circle about the centre."""
    ref, center = sp.line(c.line("line")), sp.circle_at(c.text("center"))
    return lambda s: [_tangency(s, ref, center)]


def tangent_at_point(c: Condition, sp: Space) -> ResidualFn:
    """tangent_at_point: the point on line and circle, the line perpendicular to the radius."""
    ref, center = sp.line(c.line("line")), sp.circle_at(c.text("center"))
    t = sp.point(c.text("point"))
    radius_line = LineRef(through=(center, t))

    def residual(s: State) -> list[float]:
        return [
            on_line(s, s.pt(t), ref),
            _off_circles(s, t, center),
            cos_between(s, ref, radius_line),
        ]

    return residual


def midpoint_of_arc(c: Condition, sp: Space) -> ResidualFn:
    """midpoint_of_arc: A, B, M not collinear, and MA - MB."""
    m, (a, b) = sp.point(c.text("point")), sp.labels(c.labels("arc"))
    # The program draws the circle through A, B, M (the check needs one); they must not be
    # collinear for it to exist.
    shape = not_collinear((a, b, m))
    return lambda s: shape(s) + [(dist(s.pt(m), s.pt(a)) - dist(s.pt(m), s.pt(b))) / s.scale]


def point_on_arc(c: Condition, sp: Space) -> ResidualFn:
    """point_on_arc: A, B, P not collinear; a hinge on angle APB picks the major or minor arc."""
    p, (a, b) = sp.point(c.text("point")), sp.labels(c.labels("arc"))
    shape = not_collinear((a, b, p))
    kind = c.args.get("arc_type")

    def residual(s: State) -> list[float]:
        if kind is None:
            return shape(s)
        inscribed = angle(s.pt(a), s.pt(p), s.pt(b))
        gap = math.pi / 2 - inscribed if kind == "major" else inscribed - math.pi / 2
        return shape(s) + [hinge(ANGLE_MARGIN - gap)]

    return residual


def point_incenter(c: Condition, sp: Space) -> ResidualFn:
    """point_incenter: a non-degenerate triangle, and the point's offset from its incenter."""
    p, tri = sp.point(c.text("point")), sp.labels(c.labels("triangle"))
    shape = not_collinear(tri)

    def residual(s: State) -> list[float]:
        a, b, k = (s.pt(x) for x in tri)
        wa, wb, wk = dist(b, k), dist(k, a), dist(a, b)
        total = max(wa + wb + wk, 1e-12)
        ix = (wa * a[0] + wb * b[0] + wk * k[0]) / total
        iy = (wa * a[1] + wb * b[1] + wk * k[1]) / total
        q = s.pt(p)
        return shape(s) + [(q[0] - ix) / s.scale, (q[1] - iy) / s.scale]

    return residual


def _convexity(s: State, labels: tuple[str, ...]) -> list[float]:
    """Hinges: every turn of the polygon has the sign of their sum, with a margin."""
    pts = [s.pt(x) for x in labels]
    n = len(pts)
    turns = [cross(pts[i], pts[(i + 1) % n], pts[(i + 2) % n]) / s.scale**2 for i in range(n)]
    sign = 1.0 if sum(turns) >= 0.0 else -1.0
    return [hinge(MARGIN - sign * t) for t in turns]


def polygon_property(c: Condition, sp: Space) -> ResidualFn:
    """polygon_property: the diagonal, side and parallel-side equations `kind` requires."""
    labels, kind = sp.labels(c.labels("polygon")), c.text("kind")
    shape = not_collinear(labels)
    side_a, side_b = LineRef(through=labels[0:2]), LineRef(through=labels[2:4])
    side_c, side_d = LineRef(through=labels[1:3]), LineRef(through=(labels[3], labels[0]))

    def residual(s: State) -> list[float]:
        p = [s.pt(x) for x in labels]
        out = shape(s)
        m1, m2 = mid(p[0], p[2]), mid(p[1], p[3])
        diagonals = (dist(p[0], p[2]) - dist(p[1], p[3])) / s.scale
        if kind in ("parallelogram", "rectangle", "rhombus", "square"):
            out += [(m1[0] - m2[0]) / s.scale, (m1[1] - m2[1]) / s.scale]
        if kind in ("rectangle", "square", "isosceles_trapezoid"):
            out.append(diagonals)
        if kind in ("rhombus", "square"):
            out.append((dist(p[0], p[1]) - dist(p[1], p[2])) / s.scale)
        if kind in ("trapezoid", "isosceles_trapezoid"):
            sines = (sin_between(s, side_a, side_b), sin_between(s, side_c, side_d))
            out += _convexity(s, labels) + [min(sines, key=abs)]
        return out

    return residual


def regular_polygon(c: Condition, sp: Space) -> ResidualFn:
    """regular_polygon: convex, equal non-vanishing sides, every interior angle (n - 2) pi / n."""
    labels = sp.labels(c.labels("polygon"))
    n = len(labels)
    interior = math.pi * (n - 2) / n

    def residual(s: State) -> list[float]:
        p = [s.pt(x) for x in labels]
        sides = [dist(p[i], p[(i + 1) % n]) / s.scale for i in range(n)]
        angles = [angle(p[i - 1], p[i], p[(i + 1) % n]) - interior for i in range(n)]
        equal = [v - sides[0] for v in sides[1:]]
        return _convexity(s, labels) + equal + angles + [hinge(MARGIN - sides[0])]

    return residual


def _rotated(p: Vec, center: Vec, radians: float) -> Vec:
    dx, dy = p[0] - center[0], p[1] - center[1]
    cos, sin = math.cos(radians), math.sin(radians)
    return (center[0] + dx * cos - dy * sin, center[1] + dx * sin + dy * cos)


def _mapping(c: Condition, sp: Space) -> tuple[str, list[tuple[str, str]]]:
    pairs = zip(sp.labels(c.labels("preimage")), sp.labels(c.labels("image")), strict=True)
    return sp.point(c.text("center")), list(pairs)


def rotation(c: Condition, sp: Space) -> ResidualFn:
    """rotation: each image point's offset from its preimage rotated by `angle` about the centre."""
    center, pairs = _mapping(c, sp)
    sign = 1.0 if c.text("direction") == "counterclockwise" else -1.0
    turn = sign * math.radians(c.number("angle"))

    def residual(s: State) -> list[float]:
        out = []
        for src, dst in pairs:
            want, got = _rotated(s.pt(src), s.pt(center), turn), s.pt(dst)
            out += [(got[0] - want[0]) / s.scale, (got[1] - want[1]) / s.scale]
        return out

    return residual


def transformation(c: Condition, sp: Space) -> ResidualFn:
    """geometric_transformation: one unknown non-zero turn about the centre maps each preimage."""
    center, pairs = _mapping(c, sp)
    theta = sp.scalar(f"~turn.{len(sp.scalars)}")

    def residual(s: State) -> list[float]:
        turn = s.scalars[theta]
        out = [hinge(ANGLE_MARGIN - abs(math.remainder(turn, 2 * math.pi)))]
        for src, dst in pairs:
            want, got = _rotated(s.pt(src), s.pt(center), turn), s.pt(dst)
            out += [(got[0] - want[0]) / s.scale, (got[1] - want[1]) / s.scale]
        return out

    return residual
