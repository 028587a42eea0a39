"""The command table: every DSL command and overload, in one declarative list.

Overloads are tried in order; the first whose input kinds match is used. docs/dsl.md lists
the same table (a test keeps them in step). Kinds are defined in `overloads.KINDS`.
"""

from __future__ import annotations

from geometry.dsl import measures as m
from geometry.dsl import predicates as pr
from geometry.dsl import realisers as r
from geometry.dsl.overloads import Command, Overload
from geometry.dsl.scene import Line, Ray, Segment, Vector

O = Overload  # noqa: E741  (short alias keeps each table row on one line)

_TABLE: tuple[Command, ...] = (
    Command(
        "point",
        (
            O((), ("point",), r.point_free, "a free point, placed by the statement's seed"),
            O(("number", "number"), ("point",), r.point_xy, "the point (x, y)"),
            O(("round",), ("point",), r.point_on, "a point on a circle or arc (seeded)"),
            O(("linear",), ("point",), r.point_on, "a point on a line, segment or ray (seeded)"),
        ),
        examples=("point : 0 0 -> A", "point : 100*cos(45°) 100*sin(45°) -> B", "point : c -> P"),
    ),
    Command(
        "segment",
        (
            O(
                ("point", "point"),
                ("segment",),
                r.two_points(Segment),
                "segment AB",
                (r.distinct(),),
            ),
        ),
    ),
    Command(
        "ray",
        (
            O(
                ("point", "point"),
                ("ray",),
                r.two_points(Ray),
                "ray from A through B",
                (r.distinct(),),
            ),
        ),
    ),
    Command(
        "line",
        (
            O(("point", "point"), ("line",), r.two_points(Line), "line AB", (r.distinct(),)),
            O(
                ("point", "linear"),
                ("line",),
                r.line_parallel_through,
                "the line through P parallel to the given line",
            ),
        ),
    ),
    Command(
        "circle",
        (
            O(
                ("point", "point"),
                ("circle",),
                r.circle_through,
                "centre O through A",
                (r.distinct(),),
            ),
            O(
                ("point", "number"),
                ("circle",),
                r.circle_radius,
                "centre O, radius r",
                (r.positive(1),),
            ),
            O(
                ("point", "segment"),
                ("circle",),
                r.circle_radius,
                "centre O, radius = |segment|",
                (r.positive(1),),
            ),
            O(
                ("point", "point", "point"),
                ("circle",),
                r.circle_three,
                "circle through A, B, C",
                (r.distinct(),),
            ),
        ),
        examples=("circle : O A -> c", "circle : O 50 -> c", "circle : A B C -> circumcircle"),
    ),
    Command(
        "midpoint",
        (
            O(("point", "point"), ("point",), r.midpoint, "midpoint of A and B"),
            O(("segment",), ("point",), r.midpoint, "midpoint of a segment"),
        ),
    ),
    Command(
        "line_bisector",
        (
            O(("point", "point"), ("line",), r.line_bisector, "perpendicular bisector of AB"),
            O(("segment",), ("line",), r.line_bisector, "perpendicular bisector of a segment"),
        ),
    ),
    Command(
        "angular_bisector",
        (
            O(
                ("point", "point", "point"),
                ("line",),
                r.angular_bisector_points,
                "bisector of angle ABC (vertex B)",
                (r.distinct(0, 1), r.distinct(1, 2)),
            ),
            O(("angle",), ("line",), r.angular_bisector_angle, "bisector of an angle object"),
            O(
                ("linear", "linear"),
                ("line", "line"),
                r.angular_bisector_lines,
                "both bisectors of two crossing lines: along d1/|d1|+d2/|d2| first, then across",
            ),
        ),
    ),
    Command(
        "orthogonal_line",
        (
            O(
                ("point", "linear"),
                ("line",),
                r.line_orthogonal_through,
                "the perpendicular to a line through P (P may lie off or on it)",
            ),
        ),
    ),
    Command(
        "parallel_line",
        (O(("point", "linear"), ("line",), r.line_parallel_through, "the parallel through P"),),
    ),
    Command(
        "intersect",
        (
            O(
                ("linear", "linear"),
                ("point",),
                r.intersect_linear,
                "crossing of two lines/rays/segments; outside a ray or segment it is an error",
            ),
            O(
                ("linear", "round"),
                ("point", "point"),
                r.intersect_linear_round,
                "line with circle/arc, in order along the line; 1 output when tangent or when "
                "only one crossing lies on the segment, ray or arc",
                counts=r.one_or_two,
            ),
            O(
                ("round", "linear"),
                ("point", "point"),
                r.intersect_linear_round,
                "as above, with the circle first",
                counts=r.one_or_two,
            ),
            O(
                ("round", "round"),
                ("point", "point"),
                r.intersect_rounds,
                "two circles/arcs; the first point lies left of centre1 -> centre2; 1 output when "
                "they touch",
                counts=r.one_or_two,
            ),
        ),
        examples=("intersect : l1 l2 -> P", "intersect : c seg_AB -> P _"),
    ),
    Command(
        "rotate",
        (
            O(
                ("object", "number", "point"),
                ("object",),
                r.rotate_angle_center,
                "counter-clockwise by the angle about the point (plain numbers are degrees)",
            ),
            O(
                ("object", "point", "number"),
                ("object",),
                r.rotate_center_angle,
                "the same with centre before angle",
            ),
        ),
        examples=("rotate : B 30° M -> C", "rotate : tri 90 O -> tri2"),
    ),
    Command(
        "mirror",
        (
            O(("object", "point"), ("object",), r.mirror_point, "point reflection"),
            O(("object", "linear"), ("object",), r.mirror_line, "reflection across a line"),
        ),
    ),
    Command("translate", (O(("object", "vector"), ("object",), r.translate, "shift by a vector"),)),
    Command(
        "vector", (O(("point", "point"), ("vector",), r.two_points(Vector), "vector from A to B"),)
    ),
    Command(
        "tangent",
        (
            O(
                ("point", "circle"),
                ("line", "line"),
                r.tangent,
                "tangents from P: 2 lines from outside (the first touches left of P -> centre), "
                "1 line when P is on the circle",
                counts=r.tangent_counts,
            ),
        ),
    ),
    Command("polar", (O(("point", "circle"), ("line",), r.polar, "polar line of P"),)),
    Command(
        "polygon",
        (
            O(
                ("point", "point", "number"),
                ("polygon", "segment*n", "point*(n-2)"),
                r.regular_polygon,
                "regular n-gon, counter-clockwise from A, B: polygon, its n sides, then the "
                "n-2 new vertices (or polygon and new vertices only)",
                (r.distinct(0, 1), r.side_count(2)),
                counts=r.regular_counts,
            ),
            O(
                ("point", "point", "point"),
                ("polygon", "segment*n"),
                r.polygon,
                "polygon, then sides AB, BC, ..., last-first (or the polygon alone)",
                (r.non_degenerate_polygon(),),
                variadic=True,
                counts=r.polygon_counts,
            ),
        ),
        examples=("polygon : A B C -> tri c a b", "polygon : A B 4 -> sq s1 s2 s3 s4 C D"),
    ),
    Command(
        "semicircle",
        (
            O(
                ("point", "point"),
                ("arc",),
                r.semicircle,
                "half circle on diameter AB, on the left of A -> B",
                (r.distinct(),),
            ),
        ),
    ),
    Command(
        "angle",
        (
            O(
                ("point", "point", "point"),
                ("angle",),
                r.angle,
                "angle ABC at B, in [0°, 180°]",
                (r.distinct(0, 1), r.distinct(1, 2)),
            ),
        ),
    ),
    Command(
        "distance",
        (
            O(("point", "point"), ("number",), m.distance, "|AB|"),
            O(("point", "linear"), ("number",), m.distance_to_line, "distance to the line"),
        ),
    ),
    Command("length", (O(("segment",), ("number",), m.length, "length of a segment"),)),
    Command("radius", (O(("round",), ("number",), m.radius, "radius of a circle or arc"),)),
    Command("center", (O(("round",), ("point",), m.center, "centre of a circle or arc"),)),
    Command(
        "area",
        (
            O(("polygon",), ("number",), m.area, "area of a polygon"),
            O(("circle",), ("number",), m.area, "area of a circle"),
            O(
                ("point", "point", "point"),
                ("number",),
                m.area,
                "area of the polygon A B C ...",
                variadic=True,
            ),
        ),
    ),
    Command(
        "perimeter",
        (
            O(("polygon",), ("number",), m.perimeter, "perimeter of a polygon"),
            O(("circle",), ("number",), m.perimeter, "circumference"),
            O(
                ("point", "point", "point"),
                ("number",),
                m.perimeter,
                "perimeter of A B C ...",
                variadic=True,
            ),
        ),
    ),
    Command("sum", (O(("scalar", "scalar"), ("number",), m.arith_sum, "a + b"),)),
    Command(
        "minus",
        (
            O(("scalar", "scalar"), ("number",), m.arith_minus, "a - b"),
            O(("scalar",), ("number",), m.arith_negate, "-a"),
        ),
    ),
    Command("product", (O(("scalar", "scalar"), ("number",), m.arith_product, "a * b"),)),
    Command("ratio", (O(("scalar", "scalar"), ("number",), m.arith_ratio, "a / b"),)),
    Command(
        "const",
        (
            O(
                ("number",),
                ("number",),
                m.const,
                "a named number; `const AngleSize v` is in radians, `const int v` whole",
            ),
        ),
        examples=("const : 5 -> r", "const int 90 -> deg", "const Measure 10 -> length"),
    ),
    Command(
        "equality",
        (
            O(
                ("point", "point"),
                ("number",),
                m.equality_points,
                "1 if the points coincide, else 0",
            ),
            O(("scalar", "scalar"), ("number",), m.equality_numbers, "1 if equal, else 0"),
        ),
    ),
    Command(
        "power",
        (O(("scalar", "number"), ("number",), pr.power, "x to the power n (x^n)"),),
        examples=("power : AB 2 -> AB_squared",),
    ),
    # Predicates of the public DSL: each binds 1 (holds) or 0 (does not) to its output.
    Command(
        "are_parallel",
        (O(("linear", "linear"), ("number",), pr.are_parallel, "1 if the lines are parallel"),),
    ),
    Command(
        "are_perpendicular",
        (
            O(
                ("linear", "linear"),
                ("number",),
                pr.are_perpendicular,
                "1 if the lines are perpendicular",
            ),
        ),
    ),
    Command(
        "are_collinear",
        (
            O(
                ("point", "point", "point"),
                ("number",),
                pr.are_collinear,
                "1 if the points lie on one line",
            ),
        ),
    ),
    Command(
        "are_concyclic",
        (
            O(
                ("point", "point", "point", "point"),
                ("number",),
                pr.are_concyclic,
                "1 if the points lie on one circle (or one line)",
            ),
        ),
    ),
    Command(
        "are_concurrent",
        (
            O(
                ("curve", "curve", "curve"),
                ("number",),
                pr.are_concurrent,
                "1 if one point lies on all three (segments, rays, arcs within their bounds)",
            ),
        ),
    ),
    Command(
        "are_congruent",
        (
            O(("angle", "angle"), ("number",), pr.are_congruent_angles, "1 if equal angles"),
            O(
                ("segment", "segment"),
                ("number",),
                pr.are_congruent_segments,
                "1 if equally long",
            ),
        ),
    ),
    Command(
        "are_complementary",
        (
            O(
                ("angle", "angle"),
                ("number",),
                pr.are_complementary,
                "1 if the angles sum to 180° (the public command's meaning)",
            ),
        ),
    ),
    Command(
        "are_equal",
        (
            O(("point", "point"), ("number",), pr.are_equal_points, "1 if the points coincide"),
            O(("scalar", "scalar"), ("number",), pr.are_equal_numbers, "1 if equal"),
        ),
    ),
    Command(
        "contained_by",
        (
            O(
                ("point", "linear"),
                ("number",),
                pr.contained_by,
                "1 if the point is on the line, ray or segment (within its bounds)",
            ),
            O(
                ("point", "round"),
                ("number",),
                pr.contained_by,
                "1 if the point is on the circle or arc",
            ),
        ),
    ),
    Command(
        "touches",
        (
            O(
                ("circle", "circle"),
                ("number",),
                pr.touches,
                "1 if the circles are tangent (inside or outside)",
            ),
            O(
                ("linear", "circle"),
                ("number",),
                pr.touches,
                "1 if the line (carrying a segment or ray) is tangent to the circle",
            ),
            O(("circle", "linear"), ("number",), pr.touches, "as above, circle first"),
        ),
    ),
    Command(
        "prove",
        (
            O(
                ("any",),
                ("_",),
                m.prove,
                "accepted for compatibility; does nothing",
                counts=m.zero_or_one,
                stores=False,
            ),
        ),
    ),
)

COMMANDS: dict[str, Command] = {command.name: command for command in _TABLE}
