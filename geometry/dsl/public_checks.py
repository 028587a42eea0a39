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
12-digit coordinates on a segment is not collinear with its ends by `matrix_rank`, so it
fails `point_on_segment`; a line required by two points is the first drawn line, segment or
ray through both, so a point on line AB fails `point_on_line` when AB was drawn as a
segment and the point lies beyond it; `point_outside_line` passes when its line is absent.

The tests themselves are in public_conditions_lines.py and public_conditions_shapes.py, the
lookups and primitives they share in public_checker.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from geometry.dsl.public_checker import Checker, Data
from geometry.dsl.public_conditions_lines import LINE_CHECKS
from geometry.dsl.public_conditions_shapes import SHAPE_CHECKS

CHECKS: dict[str, Callable[[Checker, Data], bool]] = {**LINE_CHECKS, **SHAPE_CHECKS}


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
