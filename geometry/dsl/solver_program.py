"""Write a solved model as a DSL program the executor runs and the validator accepts.

Every labelled point is placed by its coordinates (`point : x y -> A`), then every object a
check or a required-object match needs is drawn: named lines through two anchor points,
perpendicular bisectors, required segments, lines, circles (through their radius point, or
of a radius) and polygons, and one circle through the ends of each arc a condition names.
"""

from __future__ import annotations

from collections.abc import Iterator

from geometry.dsl.solver_model import Model
from geometry.dsl.solver_space import State

# Coordinates are printed with this many significant digits: far below the validator's
# tolerance (1e-3 of the figure), and exact enough that a program re-run gives the same
# verdict as the floats it came from.
DIGITS = 12


def number(value: float) -> str:
    """A coordinate as DSL text; tiny values print as 0 so programs stay readable."""
    return "0" if abs(value) < 1e-12 else format(value, f".{DIGITS}g")


class _Labels:
    """Fresh labels for drawn objects that never clash with the problem's own names."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        count = 1
        while f"{base}{count}" in self.taken:
            count += 1
        label = f"{base}{count}"
        self.taken.add(label)
        return label


def write_program(model: Model, state: State) -> str:
    """The DSL program drawing `model`'s figure at `state`."""
    return "\n".join(_lines(model, state)) + "\n"


def _lines(model: Model, state: State) -> Iterator[str]:
    space, req = model.space, model.problem.required
    labels = _Labels(set(space.points) | set(space.named_lines))
    anchor_labels = {
        a: labels.fresh(f"{name}_p") for name, ends in space.named_lines.items() for a in ends
    }
    for label in space.points:
        x, y = state.pt(label)
        yield f"point : {number(x)} {number(y)} -> {label}"
    for anchor, label in anchor_labels.items():
        x, y = state.pt(anchor)
        yield f"point : {number(x)} {number(y)} -> {label}"
    for name, (a, b) in space.named_lines.items():
        yield f"line : {anchor_labels[a]} {anchor_labels[b]} -> {name}"
    for a, b in space.bisector_lines:
        yield f"line_bisector : {a} {b} -> {labels.fresh('bisector')}"
    for a, b in req.segments:
        yield f"segment : {a} {b} -> {labels.fresh('seg')}"
    for line in req.lines:
        if line.through is not None:
            yield f"line : {line.through[0]} {line.through[1]} -> {labels.fresh('line')}"
    for center, radii in space.circles.items():
        for kind, value in radii:
            if kind == "point":
                through = value
            else:
                radius = value if kind == "value" else state.scalars[str(value)]
                assert isinstance(radius, float)
                through = number(radius)
            yield f"circle : {center} {through} -> {labels.fresh('circle')}"
    for condition in model.problem.conditions:
        if condition.type in ("midpoint_of_arc", "point_on_arc"):
            a, b = condition.labels("arc")
            yield f"circle : {a} {b} {condition.text('point')} -> {labels.fresh('arc')}"
    for polygon in req.polygons:
        # The polygon and its sides: the one output form the public executor accepts (its
        # `polygon` command returns both, and refuses a line naming the polygon alone).
        sides = " ".join(labels.fresh("side") for _ in polygon)
        yield f"polygon : {' '.join(polygon)} -> {labels.fresh('poly')} {sides}"
