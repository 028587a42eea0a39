"""GeoBuild verification conditions: the table of checks, one per condition type.

`CHECKS` maps each condition type in the data set to the function that judges it on a
figure; `evaluate` runs one condition and never raises: a condition that names something
the figure lacks, or whose data could not be read, fails with a reason.
"""

from __future__ import annotations

from collections.abc import Callable

from geometry.dsl.conditions import checks_lines as cl
from geometry.dsl.conditions import checks_shapes as cs
from geometry.dsl.conditions.figure import Figure, Unevaluable
from geometry.dsl.conditions.model import Condition, LineRef
from geometry.dsl.conditions.normalise import FIELDS

Check = Callable[[Condition, Figure], tuple[bool, str]]

CHECKS: dict[str, Check] = {
    "angle_value": cl.check_angle_value,
    "angle_equality": cl.check_angle_equality,
    "angle_sum": cl.check_angle_sum,
    "angle_ratio": cl.check_angle_ratio,
    "angle_bisector": cl.check_angle_bisector,
    "point_on_line": cl.check_point_on_line,
    "point_outside_line": cl.check_point_outside_line,
    "point_above_line": cl.check_point_above_line,
    "same_side": cl.check_same_side,
    "point_on_segment": cl.check_point_on_segment,
    "point_on_segment_extension": cl.check_point_on_extension,
    "point_on_line_extension": cl.check_point_on_extension,
    "midpoint_of": cl.check_midpoint_of,
    "distance_equals": cl.check_distance_equals,
    "segment_equality": cl.check_segment_equality,
    "perimeter": cl.check_perimeter,
    "collinear": cl.check_collinear,
    "not_collinear": cl.check_not_collinear,
    "triangle_valid": cl.check_triangle_valid,
    "isosceles_triangle": cl.check_isosceles_triangle,
    "order_on_line": cl.check_order_on_line,
    "parallel": cl.check_parallel,
    "perpendicular": cl.check_perpendicular,
    "perpendicular_bisector": cl.check_perpendicular_bisector,
    "intersection": cl.check_on_all_lines,
    "intersection_point": cl.check_on_all_lines,
    "point_on_circle": cs.check_point_on_circle,
    "point_inside_circle": cs.check_point_inside_circle,
    "point_intersection": cs.check_point_intersection,
    "concyclic": cs.check_concyclic,
    "diameter": cs.check_diameter,
    "tangent": cs.check_tangent,
    "tangent_at_point": cs.check_tangent_at_point,
    "midpoint_of_arc": cs.check_midpoint_of_arc,
    "point_on_arc": cs.check_point_on_arc,
    "point_incenter": cs.check_point_incenter,
    "polygon_property": cs.check_polygon_property,
    "regular_polygon": cs.check_regular_polygon,
    "rotation": cs.check_rotation,
    "geometric_transformation": cs.check_transformation,
}

# Every type the loader can read has a check, and no check is unreachable.
assert set(CHECKS) == set(FIELDS), set(CHECKS) ^ set(FIELDS)


def evaluate(condition: Condition, figure: Figure) -> tuple[bool, str]:
    """(holds, reason) for one condition on one figure; never raises."""
    if condition.error is not None:
        return False, f"data error: {condition.error}"
    check = CHECKS.get(condition.type)
    if check is None:
        return False, f"no check for condition type {condition.type!r}"
    try:
        return check(condition, figure)
    except Unevaluable as err:
        return False, f"cannot evaluate: {err}"
    except ZeroDivisionError:
        # Coincident points in a construction the check did not anticipate.
        return False, "cannot evaluate: degenerate figure (coincident points)"


__all__ = ["CHECKS", "Check", "Condition", "Figure", "LineRef", "evaluate"]
