"""Judge an executed scene against a GeoBuild problem: required objects and conditions.

Objects are matched by coordinates, not by how a program named or ordered them: segment AB
matches a drawn BA, a polygon matches any rotation or reversal of its vertices, a circle
{center O, radius_point A} matches any drawn circle centred at O through A. Conditions are
checked through the table in geometry.dsl.conditions, on the very scene that was executed.
"""

from __future__ import annotations

from dataclasses import dataclass

from geometry.dsl.conditions import evaluate
from geometry.dsl.conditions.figure import Figure, Unevaluable, carrier_of, distance_to_line
from geometry.dsl.conditions.model import LineRef
from geometry.dsl.dataset import CircleSpec, Problem
from geometry.dsl.scene import Circle, Line, Point, Polygon, Scene, Segment

OBJECT_WEIGHT = 0.3
CONDITION_WEIGHT = 0.7
# The public benchmark calls a program solved when both scores reach this (its success rule).
PUBLIC_SUCCESS_THRESHOLD = 0.9


@dataclass(frozen=True)
class FailedCondition:
    """A condition that does not hold, with what was measured."""

    type: str
    description: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """This failure as JSON fields: type, condition description and reason."""
        return {"type": self.type, "condition": self.description, "reason": self.reason}


@dataclass(frozen=True)
class Verdict:
    """How well a scene satisfies a problem."""

    problem_id: str
    object_score: float
    condition_score: float
    missing_objects: tuple[str, ...]
    failed_conditions: tuple[FailedCondition, ...]

    @property
    def success(self) -> bool:
        """All required objects present and all conditions hold."""
        return not self.missing_objects and not self.failed_conditions

    @property
    def success_public(self) -> bool:
        """The public GeoBuildBench rule: object and condition scores both at least 0.9."""
        return (
            self.object_score >= PUBLIC_SUCCESS_THRESHOLD
            and self.condition_score >= PUBLIC_SUCCESS_THRESHOLD
        )

    @property
    def partial_score(self) -> float:
        """0.3 x object score + 0.7 x condition score (the paper's weighting)."""
        return OBJECT_WEIGHT * self.object_score + CONDITION_WEIGHT * self.condition_score

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict of the verdict."""
        return {
            "id": self.problem_id,
            "success": self.success,
            "success_public": self.success_public,
            "object_score": self.object_score,
            "condition_score": self.condition_score,
            "partial_score": self.partial_score,
            "missing_objects": list(self.missing_objects),
            "failed_conditions": [f.to_json() for f in self.failed_conditions],
        }


def validate(problem: Problem, scene: Scene) -> Verdict:
    """Score `scene` against `problem`'s required objects and conditions."""
    figure = Figure.of(scene)
    missing = tuple(missing_objects(problem, figure))
    required = problem.required.count()
    failed: list[FailedCondition] = []
    for condition in problem.conditions:
        holds, reason = evaluate(condition, figure)
        if not holds:
            failed.append(FailedCondition(condition.type, condition.describe(), reason))
    n_conditions = len(problem.conditions)
    return Verdict(
        problem_id=problem.id,
        object_score=1.0 if required == 0 else (required - len(missing)) / required,
        condition_score=1.0 if n_conditions == 0 else (n_conditions - len(failed)) / n_conditions,
        missing_objects=missing,
        failed_conditions=tuple(failed),
    )


def missing_objects(problem: Problem, figure: Figure) -> list[str]:
    """Names of the required objects the figure lacks, e.g. `segment AB`."""
    req = problem.required
    missing = [f"point {p}" for p in req.points if not _has_point(figure, p)]
    missing += [f"segment {a}{b}" for a, b in req.segments if not _has_segment(figure, a, b)]
    missing += [f"line {line}" for line in req.lines if not _has_line(figure, line)]
    missing += [str(c) for c in req.circles if not _has_circle(figure, c)]
    missing += [
        f"polygon {''.join(poly)}" for poly in req.polygons if not _has_polygon(figure, poly)
    ]
    return missing


def _has_point(figure: Figure, label: str) -> bool:
    return isinstance(figure.scene.objects.get(label), Point)


def _points(figure: Figure, labels: tuple[str, ...]) -> list[Point] | None:
    if not all(_has_point(figure, label) for label in labels):
        return None
    return [figure.point(label) for label in labels]


def _drawn_segments(scene: Scene) -> list[tuple[Point, Point]]:
    """Segments drawn as such or as polygon edges (`polygon : A B C` draws AB, BC, CA)."""
    out = [(s.a, s.b) for s in scene.of_type(Segment) if isinstance(s, Segment)]
    for poly in scene.of_type(Polygon):
        assert isinstance(poly, Polygon)
        v = poly.vertices
        out += [(v[i], v[(i + 1) % len(v)]) for i in range(len(v))]
    return out


def _has_segment(figure: Figure, a_label: str, b_label: str) -> bool:
    pts = _points(figure, (a_label, b_label))
    if pts is None:
        return False
    a, b = pts
    return any(
        (figure.coincide(a, p) and figure.coincide(b, q))
        or (figure.coincide(a, q) and figure.coincide(b, p))
        for p, q in _drawn_segments(figure.scene)
    )


def _has_line(figure: Figure, ref: LineRef) -> bool:
    if ref.name is not None:
        return carrier_of(figure.scene.objects.get(ref.name)) is not None
    if ref.bisector_of is not None:
        # A described line ("the perpendicular bisector of AB"): any drawn line that is it.
        try:
            figure.line(ref)
        except Unevaluable:
            return False
        return True
    assert ref.through is not None
    pts = _points(figure, ref.through)
    if pts is None:
        return False
    carriers = [carrier_of(line) for line in figure.scene.of_type(Line)]
    return any(
        all(distance_to_line(p, *carrier) <= figure.tol for p in pts)
        for carrier in carriers
        if carrier is not None
    )


def _has_circle(figure: Figure, spec: CircleSpec) -> bool:
    if not _has_point(figure, spec.center):
        return False
    center = figure.point(spec.center)
    if spec.radius_point is not None:
        if not _has_point(figure, spec.radius_point):
            return False
        radius = center.distance(figure.point(spec.radius_point))
    else:
        assert spec.radius is not None
        radius = spec.radius
    return any(
        figure.coincide(k.center, center) and figure.same(k.radius, radius)
        for k in figure.scene.of_type(Circle)
        if isinstance(k, Circle)
    )


def _has_polygon(figure: Figure, labels: tuple[str, ...]) -> bool:
    pts = _points(figure, labels)
    if pts is None:
        return False
    n = len(pts)
    for poly in figure.scene.of_type(Polygon):
        assert isinstance(poly, Polygon)
        if len(poly.vertices) != n:
            continue
        for cycle in (poly.vertices, tuple(reversed(poly.vertices))):
            for shift in range(n):
                if all(figure.coincide(pts[i], cycle[(i + shift) % n]) for i in range(n)):
                    return True
    return False
