"""The solver's mirror of CHECKS: one residual builder per GeoBuild condition type.

Builders live in solver_lines (incidence, angles, lengths) and solver_shapes (circles,
polygons, transformations); each returns residuals that vanish exactly when the condition
holds.
"""

from __future__ import annotations

from collections.abc import Callable

from geometry.dsl import solver_lines as ln
from geometry.dsl import solver_shapes as sh
from geometry.dsl.conditions.model import Condition
from geometry.dsl.solver_space import ResidualFn, Space

Builder = Callable[[Condition, Space], ResidualFn]

BUILDERS: dict[str, Builder] = {
    "angle_value": ln.angle_value,
    "angle_equality": ln.angle_equality,
    "angle_sum": ln.angle_sum,
    "angle_ratio": ln.angle_ratio,
    "angle_bisector": ln.angle_bisector,
    "point_on_line": ln.point_on_line,
    "point_outside_line": ln.point_outside_line,
    "point_above_line": ln.point_above_line,
    "same_side": ln.same_side,
    "point_on_segment": ln.point_on_segment,
    "point_on_segment_extension": ln.point_on_extension,
    "point_on_line_extension": ln.point_on_extension,
    "midpoint_of": ln.midpoint_of,
    "distance_equals": ln.distance_equals,
    "segment_equality": ln.segment_equality,
    "perimeter": ln.perimeter,
    "collinear": ln.collinear,
    "not_collinear": ln.not_collinear_condition,
    "triangle_valid": ln.not_collinear_condition,
    "isosceles_triangle": ln.isosceles_triangle,
    "order_on_line": ln.order_on_line,
    "parallel": ln.parallel,
    "perpendicular": ln.perpendicular,
    "perpendicular_bisector": ln.perpendicular_bisector,
    "intersection": ln.on_all_lines,
    "intersection_point": ln.on_all_lines,
    "point_on_circle": sh.point_on_circle,
    "point_inside_circle": sh.point_inside_circle,
    "point_intersection": sh.point_intersection,
    "concyclic": sh.concyclic,
    "diameter": sh.diameter,
    "tangent": sh.tangent,
    "tangent_at_point": sh.tangent_at_point,
    "midpoint_of_arc": sh.midpoint_of_arc,
    "point_on_arc": sh.point_on_arc,
    "point_incenter": sh.point_incenter,
    "polygon_property": sh.polygon_property,
    "regular_polygon": sh.regular_polygon,
    "rotation": sh.rotation,
    "geometric_transformation": sh.transformation,
}
