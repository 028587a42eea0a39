"""The public GeoBuildBench verdict, reproduced: `judge_public(raw_problem, program)`.

What the public benchmark does with a program (ooongs/GeoBuildBench at 5a31908, read for
facts, no code taken over): `DSLExecutor.execute` runs it (lines stripped of `#` and `//`
comments); only when that succeeds does `DSLValidator.validate` read the program text again,
with its own parser that strips only `#` comments, fit the figure into the 100x100 window
(public_figure.py), look for the required objects and test the conditions (public_checks.py)
in window units. Success is object score >= 0.9 and condition score >= 0.9.

Here our executor stands in for the public one; the forms the public executor refuses and ours
accepts are refused first (`public_form_error`), so a program is judged only when the public
benchmark would have judged it, and a program its validator cannot read scores 0/0 as there
(`public_validation_error`). The raw data-set problem is read as the public loader reads
it (no normalisation: a line of three points is missing there, a wrapped segment fails).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from geometry.dsl.dataset import Problem
from geometry.dsl.executor import execute
from geometry.dsl.limits import DEFAULT_LIMITS
from geometry.dsl.public_checker import TOLERANCE, Checker, collinear
from geometry.dsl.public_checks import check_condition
from geometry.dsl.public_figure import PLine, PPolygon, PSegment, PublicFigure, fit_to_window
from geometry.dsl.public_forms import public_form_error, public_validation_error
from geometry.dsl.validator import PUBLIC_SUCCESS_THRESHOLD

RawProblem = Mapping[str, Any]
# Our bounds, less the one check the public executor does not make (zero-area polygons).
PUBLIC_LIMITS = replace(DEFAULT_LIMITS, allow_flat_polygons=True)


@dataclass(frozen=True)
class PublicVerdict:
    """The public verdict of one program: executed, scores (0 when not judged), success."""

    executed: bool
    object_score: float
    condition_score: float
    failed_conditions: tuple[str, ...] = ()  # condition types, in data-set order
    missing_objects: int = 0  # required objects absent by the public rules
    refusal: str | None = None  # why the public code would not judge it, when it would not

    @property
    def success(self) -> bool:
        """Executed, and both scores at least 0.9 (the public rule)."""
        return (
            self.executed
            and self.object_score >= PUBLIC_SUCCESS_THRESHOLD
            and self.condition_score >= PUBLIC_SUCCESS_THRESHOLD
        )

    def to_json(self) -> dict[str, object]:
        """The public verdict's fields, named apart from ours (`*_public`)."""
        return {
            "success_public": self.success,
            "object_score_public": self.object_score,
            "condition_score_public": self.condition_score,
            "failed_conditions_public": list(self.failed_conditions),
            "missing_objects_public": self.missing_objects,
            "refusal_public": self.refusal,
        }


def public_verdict(problem: Problem, program: str) -> PublicVerdict:
    """The public verdict of `program` for a loaded problem (read from its raw data)."""
    return judge_public(problem.raw, program)


def judge_public(problem: RawProblem, program: str) -> PublicVerdict:
    """The public verdict of `program` for the raw data-set `problem`."""
    refusal = public_form_error(program)
    execution = execute(program, PUBLIC_LIMITS)
    if refusal is None and execution.error is not None:
        refusal = f"execution error: {execution.error}"
    if refusal is not None:
        return PublicVerdict(False, 0.0, 0.0, refusal=refusal)
    unreadable = public_validation_error(program)
    if unreadable is not None:
        return PublicVerdict(True, 0.0, 0.0, refusal=unreadable)
    try:
        figure = fit_to_window(execution.scene)
    except ValueError as err:
        # A zero-length segment or a line without direction: the public types refuse to
        # build one (its executor fails there), where ours may keep it (a flat polygon's
        # side between repeated vertices).
        return PublicVerdict(False, 0.0, 0.0, refusal=f"public executor: {err}")
    conditions = [c for c in problem.get("verification_conditions", []) or []]
    checker = Checker(figure)
    failed = tuple(str(c.get("type")) for c in conditions if not check_condition(checker, c))
    passed = len(conditions) - len(failed)
    condition_score = passed / len(conditions) if conditions else 1.0
    found, required = object_counts(figure, problem.get("required_objects", {}) or {})
    return PublicVerdict(
        executed=True,
        object_score=found / required if required else 1.0,
        condition_score=condition_score,
        failed_conditions=failed,
        missing_objects=required - found,
    )


# -- required objects, by the public rules ----------------------------------------------


def object_counts(figure: PublicFigure, required: Mapping[str, Any]) -> tuple[int, int]:
    """(present, required) objects by the public rules; the score is their ratio (1.0 at 0/0).

    Public rules (`_check_required_objects`): a segment or a line given by two points is
    present when a drawn one joins them *or when both points exist*; a circle is present when
    any circle (or arc) is centred at its centre; a polygon by the cascade in `_polygon`.
    """
    kinds = ("points", "segments", "lines", "circles", "polygons")
    items = [(kind, item) for kind in kinds for item in required.get(kind, []) or []]
    found = sum(1 for kind, item in items if _present(figure, kind, item))
    return found, len(items)


def _present(figure: PublicFigure, kind: str, item: Any) -> bool:
    try:
        if kind == "points":
            return figure.point(item) is not None
        if kind == "segments":
            return _two_points(figure, item[0], item[1])
        if kind == "lines":
            return _line(figure, item)
        if kind == "circles":
            center = item.get("center")
            return (
                bool(center)
                and center in figure.objects
                and bool(Checker(figure).circles_at(center))
            )
        return _polygon(figure, item)
    except (TypeError, IndexError, AttributeError):
        return False


def _two_points(figure: PublicFigure, a: Any, b: Any) -> bool:
    # A drawn segment or line only adds to this when both points exist, so the test is theirs.
    return figure.point(a) is not None and figure.point(b) is not None


def _line(figure: PublicFigure, item: Any) -> bool:
    if isinstance(item, str) or (isinstance(item, list) and len(item) == 1):
        label = item if isinstance(item, str) else item[0]
        return isinstance(figure.objects.get(label), PLine)
    if isinstance(item, list) and len(item) == 2:
        return _two_points(figure, item[0], item[1])
    return False  # three points, or anything else: missing there


def _polygon(figure: PublicFigure, labels: Sequence[Any]) -> bool:
    """The public cascade: a polygon object with these vertices (rotation or reversal) that
    does not cross itself; else one with the same vertex set; else, for a triangle, the
    points not collinear; else the first cycle of drawn segments through the points; else
    the points in the required order; each of the last two only if it does not cross itself."""
    pts = [figure.point(p) for p in labels]
    if any(p is None for p in pts):
        return False
    coords = [p for p in pts if p is not None]
    polygons = [o for o in figure.objects.values() if isinstance(o, PPolygon)]
    for poly in polygons:
        if len(poly.points) == len(coords) and _same_cycle(coords, list(poly.points)):
            return not _crosses(list(poly.points))
    for poly in polygons:
        if len(poly.points) == len(coords) and all(
            any(np.allclose(v, c, atol=TOLERANCE) for c in coords) for v in poly.points
        ):
            return not _crosses(list(poly.points))
    if len(coords) == 3:
        return not collinear(*coords)
    path = _segment_cycle(figure, list(labels))
    if path is not None:
        return not _crosses([figure.objects[p].a for p in path])  # type: ignore[union-attr]
    return not _crosses(coords)


def _same_cycle(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    n = len(a)
    for offset in range(n):
        if all(np.allclose(a[i], b[(i + offset) % n], atol=TOLERANCE) for i in range(n)):
            return True
    for offset in range(n):
        if all(np.allclose(a[i], b[(offset - i) % n], atol=TOLERANCE) for i in range(n)):
            return True
    return False


def _crosses(points: list[np.ndarray]) -> bool:
    """The public self-intersection test: strict orientation changes between non-adjacent edges."""
    n = len(points)
    if n < 4:
        return False

    def ccw(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> bool:
        return bool((c[1] - a[1]) * (b[0] - a[0]) > (b[1] - a[1]) * (c[0] - a[0]))

    for i in range(n):
        p1, p2 = points[i], points[(i + 1) % n]
        for j in range(i + 2, n):
            if j in ((i + n - 1) % n, (i + 1) % n):
                continue
            p3, p4 = points[j], points[(j + 1) % n]
            if ccw(p1, p3, p4) != ccw(p2, p3, p4) and ccw(p1, p2, p3) != ccw(p1, p2, p4):
                return True
    return False


def _segment_cycle(figure: PublicFigure, labels: list[Any]) -> list[Any] | None:
    """The first Hamiltonian cycle (public search order) over drawn segments among the points.

    A segment joins the required points its ends match (either end within TOLERANCE), and
    counts only when it matches exactly two of them; fewer such segments than points: none.
    """
    edges = []
    for obj in figure.objects.values():
        if not isinstance(obj, PSegment):
            continue
        ends = [
            label
            for label in labels
            if np.allclose(obj.end_points[0], figure.objects[label].a, atol=TOLERANCE)  # type: ignore[union-attr]
            or np.allclose(obj.end_points[1], figure.objects[label].a, atol=TOLERANCE)  # type: ignore[union-attr]
        ]
        if len(ends) == 2:
            edges.append((ends[0], ends[1]))
    if len(edges) < len(labels):
        return None
    graph: dict[Any, list[Any]] = {label: [] for label in labels}
    for a, b in edges:
        graph[a].append(b)
        graph[b].append(a)
    for start in labels:
        path = _cycle_from(graph, start, len(labels))
        if path is not None:
            return path
    return None


def _cycle_from(graph: Mapping[Any, list[Any]], start: Any, size: int) -> list[Any] | None:
    # Bounded by the polygon's size (at most a handful of vertices in the data).
    def walk(current: Any, path: list[Any]) -> list[Any] | None:
        if len(path) == size:
            return path if start in graph[current] else None
        for nxt in graph[current]:
            if nxt not in path:
                found = walk(nxt, [*path, nxt])
                if found is not None:
                    return found
        return None

    return walk(start, [start])


__all__ = [
    "PublicVerdict",
    "judge_public",
    "object_counts",
    "public_form_error",
    "public_validation_error",
    "public_verdict",
]
