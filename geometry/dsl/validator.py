"""Judge an executed scene against a GeoBuild problem: required objects and conditions.

Objects are matched by coordinates, not by how a program named or ordered them: segment AB
matches a drawn BA; polygon ABCD matches a drawn polygon with any rotation or reversal of
its vertices, or drawn segments (and polygon edges) that close a simple cycle through
exactly A, B, C, D in some order; a circle {center O, radius_point A} matches any drawn
circle centred at O through A. docs/geobuild.md compares these rules with the public
benchmark's. Conditions are
checked through the table in geometry.dsl.conditions, on the very scene that was executed.
"""

from __future__ import annotations

from collections.abc import Iterator
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
    def partial_score(self) -> float:
        """0.3 x object score + 0.7 x condition score (the paper's weighting)."""
        return OBJECT_WEIGHT * self.object_score + CONDITION_WEIGHT * self.condition_score

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict of the verdict."""
        return {
            "id": self.problem_id,
            "success": self.success,
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
    """A polygon object with these vertices in order, or drawn edges closing a simple cycle."""
    pts = _points(figure, labels)
    if pts is None:
        return False
    return _has_polygon_object(figure, pts) or has_simple_edge_cycle(figure, pts)


def _has_polygon_object(figure: Figure, pts: list[Point]) -> bool:
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


def has_simple_edge_cycle(figure: Figure, pts: list[Point]) -> bool:
    """Whether drawn segments and polygon edges join `pts` into one simple closed polygon.

    The cycle must visit every vertex once (a Hamiltonian cycle of the graph whose edges are
    the drawn segments with both ends on required vertices) and its polygon must not cross
    itself. Any order counts: the data set's names fix the vertex set, not always the order.
    Extra edges (diagonals, edges to other points) do not matter.
    """
    n = len(pts)
    if n < 3:
        return False
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for p, q in _drawn_segments(figure.scene):
        ends_p = [i for i in range(n) if figure.coincide(pts[i], p)]
        ends_q = [j for j in range(n) if figure.coincide(pts[j], q)]
        for i in ends_p:
            for j in ends_q:
                if i != j:
                    neighbours[i].add(j)
                    neighbours[j].add(i)
    return any(
        is_simple_polygon([pts[i] for i in order], figure.tol)
        for order in _hamiltonian_cycles(neighbours)
    )


def _hamiltonian_cycles(neighbours: list[set[int]]) -> Iterator[list[int]]:
    """Every Hamiltonian cycle from vertex 0, each direction once (as vertex orders)."""
    n = len(neighbours)
    if any(len(adj) < 2 for adj in neighbours):
        return
    path = [0]
    used = [False] * n
    used[0] = True

    def extend() -> Iterator[list[int]]:
        last = path[-1]
        if len(path) == n:
            # path[1] < path[-1] keeps one of the two directions of each cycle.
            if 0 in neighbours[last] and path[1] < path[-1]:
                yield list(path)
            return
        for nxt in sorted(neighbours[last]):
            if not used[nxt]:
                used[nxt] = True
                path.append(nxt)
                yield from extend()
                path.pop()
                used[nxt] = False

    yield from extend()


def is_simple_polygon(vertices: list[Point], tol: float) -> bool:
    """Whether the closed polygon through `vertices` in order does not touch or cross itself.

    Non-adjacent edges may not meet (within `tol`); adjacent edges may not fold back onto
    each other; vertices may not coincide.
    """
    n = len(vertices)
    if any(vertices[i].distance(vertices[j]) <= tol for i in range(n) for j in range(i + 1, n)):
        return False
    edges = [(vertices[i], vertices[(i + 1) % n]) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            adjacent = j == i + 1 or (i == 0 and j == n - 1)
            if adjacent:
                if _folds_back(edges[i], edges[j], tol):
                    return False
            elif _segments_meet(edges[i], edges[j], tol):
                return False
    return True


def _folds_back(e: tuple[Point, Point], f: tuple[Point, Point], tol: float) -> bool:
    """Two edges sharing a vertex overlap along a stretch (the polygon doubles back)."""
    shared = next((p for p in e if any(p == q for q in f)), None)
    if shared is None:
        return False
    u = next(p for p in e if p != shared)
    v = next(p for p in f if p != shared)
    # The far end of the shorter edge lies on the longer edge: they run along each other.
    short, long_end = (u, v) if shared.distance(u) <= shared.distance(v) else (v, u)
    return _point_segment_distance(short, shared, long_end) <= tol


def _segments_meet(e: tuple[Point, Point], f: tuple[Point, Point], tol: float) -> bool:
    """Whether two segments cross or come within `tol` of each other."""
    (a, b), (c, d) = e, f
    if _orient(a, b, c) * _orient(a, b, d) < 0 and _orient(c, d, a) * _orient(c, d, b) < 0:
        return True
    return (
        min(
            _point_segment_distance(a, c, d),
            _point_segment_distance(b, c, d),
            _point_segment_distance(c, a, b),
            _point_segment_distance(d, a, b),
        )
        <= tol
    )


def _orient(a: Point, b: Point, c: Point) -> float:
    return (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)


def _point_segment_distance(p: Point, a: Point, b: Point) -> float:
    ab2 = (b.x - a.x) ** 2 + (b.y - a.y) ** 2
    if ab2 == 0:
        return p.distance(a)
    t = ((p.x - a.x) * (b.x - a.x) + (p.y - a.y) * (b.y - a.y)) / ab2
    t = min(max(t, 0.0), 1.0)
    return p.distance(Point(a.x + t * (b.x - a.x), a.y + t * (b.y - a.y)))
