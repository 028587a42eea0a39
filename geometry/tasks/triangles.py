"""Numeric (N-) generators on one triangle ABC: angle bisector, incircle, circumcircle, type."""

from __future__ import annotations

import random

from geometry import exact
from geometry.exact import (
    bisector_foot,
    circumcenter,
    incenter,
    inradius,
    max_angle_deg,
)
from geometry.figure import Draw, Figure, IntPoint
from geometry.tasks.sampling import (
    check_number_answer,
    check_point_answer,
    check_triangle,
    place,
    random_triangle,
    right_angle_vectors,
)
from geometry.thresholds import RIGHT_ANGLE_MARGIN_DEG, require

_ABC = Figure(polygons=(tuple("ABC"),))


def _abc(pts: list[IntPoint]) -> dict[str, IntPoint]:
    return dict(zip("ABC", pts, strict=True))


def bisector(rng: random.Random, label: str | None) -> Draw:
    """Point D where the bisector of angle B meets side AC (float when irrational)."""
    pts = random_triangle(rng)
    return Draw(_abc(pts), bisector_foot(*pts), _ABC)


def inner_circle_center(rng: random.Random, label: str | None) -> Draw:
    """Incenter of ABC (float when irrational)."""
    pts = random_triangle(rng)
    return Draw(_abc(pts), incenter(*pts), _ABC)


def inner_circle_radius(rng: random.Random, label: str | None) -> Draw:
    """Inradius of ABC (float when irrational)."""
    pts = random_triangle(rng)
    answer = inradius(*pts)
    check_number_answer(answer)
    return Draw(_abc(pts), answer, _ABC)


def outer_circle_center(rng: random.Random, label: str | None) -> Draw:
    """Circumcenter of ABC; redrawn when it falls off the grid (flat obtuse triangles)."""
    pts = random_triangle(rng)
    answer = circumcenter(*pts)
    check_point_answer(answer)
    return Draw(_abc(pts), answer, _ABC)


def triangle_type(rng: random.Random, label: str | None) -> Draw:
    """Acute, right or obtuse. Right triangles are built from perpendicular lattice legs with
    the right angle at a random vertex; acute and obtuse ones are drawn at random and keep
    their largest angle RIGHT_ANGLE_MARGIN_DEG away from 90 degrees."""
    if label == "right":
        u, v = right_angle_vectors(rng)
        pts = place(rng, [(0, 0), u, v])
        rng.shuffle(pts)
        check_triangle(*pts)
    else:
        pts = random_triangle(rng)
        require(abs(max_angle_deg(pts) - 90) >= RIGHT_ANGLE_MARGIN_DEG, "nearly right")
    answer = exact.triangle_type(*pts)
    require(answer == label, "label not reached")
    return Draw(_abc(pts), answer, _ABC)
