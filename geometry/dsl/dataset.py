"""Load GeoBuildBench problems (geoqa3_dataset_{en,zh}.json) into normalised `Problem`s.

Every problem in the file becomes a `Problem`, whatever its data looks like: objects and
conditions that cannot be read are reported in `data_errors` (and such conditions always
fail), so no problem leaves the success-rate denominator unnoticed. The normalisations are
listed in docs/geobuild.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from geometry.dsl.conditions.model import Condition, LineRef
from geometry.dsl.conditions.normalise import (
    DataError,
    canon_label,
    normalise_condition,
    read_labels,
    read_line,
    read_number,
)

# The data error of a problem that requires nothing and states no condition: any program,
# the empty one included, would satisfy it (the solver audit counts it solved, the agent
# loop's executor finds no program; the report counts it unsolved).
NOTHING_TO_JUDGE = "nothing to judge: no required objects and no conditions"

LANGUAGES = ("en", "zh")
T = TypeVar("T")


@dataclass(frozen=True)
class CircleSpec:
    """A required circle: centred at `center`, through `radius_point` or of `radius`."""

    center: str
    radius_point: str | None = None
    radius: float | None = None

    def __str__(self) -> str:
        if self.radius_point is not None:
            return f"circle {self.center} through {self.radius_point}"
        return f"circle {self.center} of radius {self.radius:g}"


@dataclass(frozen=True)
class RequiredObjects:
    """What the figure must contain. Segments are unordered pairs, polygons vertex cycles."""

    points: tuple[str, ...] = ()
    segments: tuple[tuple[str, str], ...] = ()
    lines: tuple[LineRef, ...] = ()
    circles: tuple[CircleSpec, ...] = ()
    polygons: tuple[tuple[str, ...], ...] = ()

    def count(self) -> int:
        """How many objects are required."""
        return (
            len(self.points)
            + len(self.segments)
            + len(self.lines)
            + len(self.circles)
            + len(self.polygons)
        )


@dataclass(frozen=True)
class Problem:
    """One GeoBuild problem with normalised objects and conditions."""

    id: str
    subject: str
    text: str
    required: RequiredObjects
    conditions: tuple[Condition, ...]
    category: str
    difficulty: int
    data_errors: tuple[str, ...] = ()
    # The problem exactly as the data file has it: the public judge
    # (geometry/dsl/public_judge.py) reads it as the public loader does, unnormalised.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


def load_problems(path: Path | str, lang: str = "en") -> list[Problem]:
    """Problems from a data file, or from a directory holding geoqa3_dataset_{lang}.json.

    Raises FileNotFoundError naming the path when it (or the language's file) is absent,
    ValueError when the file is not a GeoBuild problem set.
    """
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    file = Path(path)
    if file.is_dir():
        file = file / f"geoqa3_dataset_{lang}.json"
    if not file.is_file():
        raise FileNotFoundError(f"GeoBuild data not found: {file}")
    data = json.loads(file.read_text(encoding="utf-8"))
    raw_problems = data.get("problems") if isinstance(data, dict) else data
    if not isinstance(raw_problems, list):
        raise ValueError(f"{file}: expected {{'problems': [...]}} or a list of problems")
    return [parse_problem(raw, index) for index, raw in enumerate(raw_problems)]


def parse_problem(raw: Mapping[str, object], index: int = 0) -> Problem:
    """One raw problem -> `Problem`; unreadable parts become `data_errors`, never raise."""
    errors: list[str] = []
    conditions: list[Condition] = []
    raw_conditions = raw.get("verification_conditions", [])
    if not isinstance(raw_conditions, list):
        errors.append(f"verification_conditions is not a list: {raw_conditions!r}")
        raw_conditions = []
    for item in raw_conditions:
        if not isinstance(item, dict):
            item = {"type": "", "value": item}
        condition, notes = normalise_condition(item)
        conditions.append(condition)
        errors.extend(notes)
    required = _parse_required(raw.get("required_objects", {}), errors)
    if not conditions and not required.count():
        # Any program, the empty one included, would satisfy it: there is nothing to judge.
        errors.append(NOTHING_TO_JUDGE)
    difficulty = raw.get("difficulty", 0)
    return Problem(
        id=str(raw.get("id", f"#{index}")),
        subject=str(raw.get("subject", "")),
        text=str(raw.get("cleaned_text", raw.get("subject", ""))),
        required=required,
        conditions=tuple(conditions),
        category=str(raw.get("category", "")),
        difficulty=difficulty if isinstance(difficulty, int) else 0,
        data_errors=tuple(errors),
        raw=raw,
    )


def _parse_required(raw: object, errors: list[str]) -> RequiredObjects:
    if not isinstance(raw, dict):
        errors.append(f"required_objects is not an object: {raw!r}")
        return RequiredObjects()
    lines = _collect(raw.get("lines", []), read_line, "line", errors)
    line_names = {line.name for line in lines if line.name is not None}
    points: list[str] = []
    for item in _as_list(raw.get("points", []), "points", errors):
        label = _try(canon_label, item, "point", errors)
        # A line's own label listed among the points (problem 486: "L") is not a point.
        if label is not None and label not in points and label not in line_names:
            points.append(label)
    segments: list[tuple[str, str]] = []
    for seg in _collect(raw.get("segments", []), _read_segment, "segment", errors):
        if seg not in segments and (seg[1], seg[0]) not in segments:
            segments.append(seg)
    polygons = _collect(raw.get("polygons", []), _read_polygon, "polygon", errors)
    circles = _collect(raw.get("circles", []), _read_circle, "circle", errors)
    return RequiredObjects(
        points=tuple(points),
        segments=tuple(segments),
        lines=tuple(dict.fromkeys(lines)),
        circles=tuple(dict.fromkeys(circles)),
        polygons=tuple(dict.fromkeys(polygons)),
    )


def _read_segment(value: object) -> tuple[str, str]:
    a, b = read_labels(value, 2)
    if a == b:
        raise DataError(f"segment {a}{b} has coinciding endpoints")
    return (a, b)


def _read_polygon(value: object) -> tuple[str, ...]:
    vertices = read_labels(value)
    if len(vertices) < 3 or len(set(vertices)) != len(vertices):
        raise DataError(f"polygon {vertices} needs 3 or more distinct vertices")
    return vertices


def _read_circle(value: object) -> CircleSpec:
    if not isinstance(value, dict) or "center" not in value:
        raise DataError(f"expected {{center, radius_point}}, got {value!r}")
    center = canon_label(value["center"])
    if "radius_point" in value:
        return CircleSpec(center, radius_point=canon_label(value["radius_point"]))
    if "radius_length" in value:
        return CircleSpec(center, radius=read_number(value["radius_length"]))
    if "circle_center" in value:
        # Problem 3045 writes the point on the circle under "circle_center".
        return CircleSpec(center, radius_point=canon_label(value["circle_center"]))
    raise DataError(f"circle {value!r} has neither radius_point nor radius_length")


def _as_list(value: object, what: str, errors: list[str]) -> list[object]:
    if isinstance(value, list):
        return value
    errors.append(f"required {what} is not a list: {value!r}")
    return []


def _collect(value: object, reader: Callable[[object], T], what: str, errors: list[str]) -> list[T]:
    out: list[T] = []
    for item in _as_list(value, what + "s", errors):
        parsed = _try(reader, item, what, errors)
        if parsed is not None:
            out.append(parsed)
    return out


def _try(reader: Callable[[object], T], item: object, what: str, errors: list[str]) -> T | None:
    try:
        return reader(item)
    except DataError as err:
        errors.append(f"required {what} {item!r} dropped: {err}")
        return None
