"""The figure lookups and geometric primitives of the public validator's tests.

From `src/dsl/dsl_validator.py` (its element-dictionary lookups, `_get_line_from_data`,
`_find_line`, `_find_all_circles_with_center`) and `src/core/commands.py` (angle_ppp,
are_collinear_ppp, are_parallel_ll, are_perpendicular_ll, are_congruent_aa, line_pp) at
ooongs/GeoBuildBench 5a31908, read for facts; public_checks.py says what they decide.
"""

from __future__ import annotations

from collections.abc import Mapping
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


class CheckFailed(Exception):
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
            raise CheckFailed(f"no {label}")
        obj = self.objects[label]
        if not isinstance(obj, PPoint):
            raise CheckFailed(f"{label} is not a point")
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
            raise CheckFailed("no line")
        if isinstance(data, list) and len(data) == 2:
            if data[0] not in self.objects or data[1] not in self.objects:
                raise CheckFailed("no line points")
            found = self.find_line(data[0], data[1])
            return found if found is not None else line_through(self.pt(data[0]), self.pt(data[1]))
        raise CheckFailed("bad line")

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
                raise CheckFailed("missing point")
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
