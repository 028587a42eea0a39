"""What one generated question is made of: labelled points, parameters, the answer, the drawing.

`Draw` is what a task generator returns. Its `geometry_json()` is the documented contract of
the item table's `geometry` column: users and graders recompute answers from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

IntPoint = tuple[int, int]
# An exact answer: an option string, a number, or a point. Numbers stay Fraction while they
# are rational; irrational ones (lengths, inradii) are floats computed once from exact inputs.
Number = Fraction | float
Answer = str | Number | tuple[Number, Number]


@dataclass(frozen=True)
class Figure:
    """Objects a full image draws, named by point labels; dotted images draw the points only."""

    segments: tuple[tuple[str, str], ...] = ()
    lines: tuple[tuple[str, str], ...] = ()  # extended to the frame
    polygons: tuple[tuple[str, ...], ...] = ()
    circles: tuple[tuple[str, float], ...] = ()  # (centre label, radius)
    axes: tuple[str, ...] = ()  # reference lines named in params: "x", "y", "y=x", "y=-x"
    # (A, B, C): the half of the circle with diameter AB on C's side (semicircle_triangle).
    semicircles: tuple[tuple[str, str, str], ...] = ()
    # (P, degrees): the origin marked "O", segment OP and an arrowed arc of `degrees`
    # counter-clockwise from ray OP, smaller than |OP| so it never ends on P's image.
    rotations: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Draw:
    """One question: points in the order the question names them, params, answer, figure."""

    points: dict[str, IntPoint]
    answer: Answer
    figure: Figure
    params: dict[str, Any] = field(default_factory=dict)

    def geometry_json(self) -> str:
        """`{"points": {label: [x, y]}, "params": {...}}` with insertion order kept."""
        payload = {
            "points": {k: [int(x), int(y)] for k, (x, y) in self.points.items()},
            "params": self.params,
        }
        return json.dumps(payload, separators=(",", ":"))


def answer_json(answer: Answer) -> str:
    """Serialise an answer as the item table's `answer` column (JSON text).

    >>> answer_json("yes")
    '{"answer": "yes"}'
    >>> answer_json(Fraction(25, 2))
    '{"answer": 12.5}'
    >>> answer_json((Fraction(3, 2), Fraction(-2)))
    '{"x": 1.5, "y": -2.0}'
    """
    if isinstance(answer, str):
        return json.dumps({"answer": answer})
    if isinstance(answer, tuple):
        x, y = answer
        return json.dumps({"x": float(x), "y": float(y)})
    return json.dumps({"answer": float(answer)})
