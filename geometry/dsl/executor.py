"""Runs a DSL program line by line into a Scene, stopping at the first error.

Deterministic: the only choice the executor makes (where a free point or a point "on" an
object lands) is drawn from a generator seeded by that statement's own text and how often
the same text occurred before, so a program always yields the same figure, and editing
one line does not move the free points of the others.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import random
from dataclasses import dataclass

from geometry.dsl.commands import COMMANDS
from geometry.dsl.errors import DSLError, DSLFailure
from geometry.dsl.expressions import CONSTANT_NAMES, Number, evaluate
from geometry.dsl.limits import DEFAULT_LIMITS, Limits
from geometry.dsl.overloads import Arg, Call, Result, arg_kind
from geometry.dsl.parser import LABEL, Statement, parse_line
from geometry.dsl.scene import (
    Angle,
    Arc,
    Circle,
    GeoObject,
    Line,
    Measure,
    Point,
    Polygon,
    Ray,
    Scene,
    Segment,
    Vector,
)


@dataclass(frozen=True)
class Execution:
    """The outcome of a program: the objects built before any error, and that error."""

    scene: Scene
    error: DSLError | None

    @property
    def ok(self) -> bool:
        """Whether the whole program ran without error."""
        return self.error is None


class _Run:
    """State of one execution: the scene, which measures are angles, seen statements."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.scene = Scene()
        self.angle_labels: set[str] = set()  # measures whose value is an angle in radians
        self.seen: dict[str, int] = {}

    # -- inputs ----------------------------------------------------------------
    def _number_of(self, label: str) -> Number | None:
        """Resolver for expressions: measures, angles and segment lengths by label."""
        obj = self.scene.objects.get(label)
        if obj is None:
            return None
        if isinstance(obj, Measure):
            return Number(obj.value, label in self.angle_labels)
        if isinstance(obj, Angle):
            return Number(obj.value, is_angle=True)
        if isinstance(obj, Segment):
            return Number(obj.a.distance(obj.b))
        raise DSLFailure(
            "bad_overload",
            f"{label} is a {type(obj).__name__.lower()}; expressions can use only numbers, "
            "measures, angles and segments (as their length)",
        )

    def _resolve(self, token: str) -> Arg:
        obj = self.scene.objects.get(token)
        if obj is not None:
            if isinstance(obj, Measure):
                return Number(obj.value, token in self.angle_labels)
            return obj
        if LABEL.fullmatch(token) and token not in CONSTANT_NAMES:
            known = ", ".join(self.scene.objects) or "none"
            close = difflib.get_close_matches(token, list(self.scene.objects), n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise DSLFailure(
                "undefined_label",
                f"{token} is not defined yet; define it on an earlier line.{hint} "
                f"Defined so far: {known}",
            )
        return evaluate(token, self._number_of, self.limits)

    # -- one statement ---------------------------------------------------------
    def run(self, statement: Statement) -> None:
        command = COMMANDS.get(statement.command)
        if command is None:
            close = difflib.get_close_matches(statement.command, list(COMMANDS), n=3)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise DSLFailure(
                "unknown_command",
                f"unknown command {statement.command!r}; {hint}commands are: {', '.join(COMMANDS)}",
            )
        args = [self._resolve(token) for token in statement.inputs]
        overload = command.select(args, statement.inputs)
        call = Call(
            command=command.name,
            args=args,
            labels=statement.inputs,
            rng=self._rng(statement),
            limits=self.limits,
            const_type=statement.const_type,
            n_outputs=len(statement.outputs),
        )
        allowed = overload.allowed_counts(call)
        given = len(statement.outputs)
        if given not in allowed:
            raise DSLFailure(
                "output_count",
                f"{overload.signature(command.name)} gives "
                f"{' or '.join(str(n) for n in allowed)} output(s), but {given} were named "
                f"({' '.join(o or '_' for o in statement.outputs) or 'none'}); use _ for "
                "results you do not need",
            )
        self._check_new_labels(statement)
        for precondition in overload.preconditions:
            message = precondition.check(call)
            if message is not None:
                raise DSLFailure("geometric", message)
        try:
            results = list(overload.realise(call))
        except (ArithmeticError, ValueError) as exc:
            # Float corner cases the preconditions did not foresee must not crash the actor.
            raise DSLFailure(
                "geometric", f"{command.name}: the construction cannot be computed ({exc})"
            ) from exc
        if len(results) != given:
            raise DSLFailure(
                "output_count",
                f"{command.name} with {' '.join(statement.inputs)} has {len(results)} "
                f"result(s) here, but {given} output(s) were named; name {len(results)} "
                "(use _ for results you do not need)",
            )
        if overload.stores:
            for label, result in zip(statement.outputs, results, strict=True):
                if label is not None and result is not None:
                    self._store(label, result)

    def _rng(self, statement: Statement) -> random.Random:
        text = statement.text()
        occurrence = self.seen.get(text, 0)
        self.seen[text] = occurrence + 1
        digest = hashlib.sha256(f"{occurrence}|{text}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _check_new_labels(self, statement: Statement) -> None:
        named = [o for o in statement.outputs if o is not None]
        for i, label in enumerate(named):
            if label in self.scene.objects:
                existing = type(self.scene.objects[label]).__name__.lower()
                raise DSLFailure(
                    "duplicate_label",
                    f"{label} is already defined (a {existing}); choose a new label, "
                    "e.g. {label}2, or use _ to discard the result".replace("{label}", label),
                )
            if label in named[:i]:
                raise DSLFailure(
                    "duplicate_label", f"{label} is named twice among the outputs of this line"
                )

    def _store(self, label: str, result: Result) -> None:
        assert result is not None
        if isinstance(result, Number):
            if result.is_angle:
                self.angle_labels.add(label)
            obj: GeoObject = Measure(result.value)
        else:
            obj = result
        self._check_size(label, obj)
        self.scene.objects[label] = obj

    def _check_size(self, label: str, obj: GeoObject) -> None:
        values = _numbers_of(obj)
        if not all(math.isfinite(v) for v in values):
            raise DSLFailure("geometric", f"{label} has no finite coordinates")
        top = self.limits.max_abs_number
        worst = max((abs(v) for v in values), default=0.0)
        if worst > top:
            raise DSLFailure(
                "limit",
                f"{label} reaches {worst:g}, beyond ±{top:g}; nearly parallel lines or a tiny "
                "angle usually cause this",
            )


def _numbers_of(obj: GeoObject) -> list[float]:
    """Every coordinate and length of `obj`, for the finiteness and magnitude checks."""
    if isinstance(obj, Point):
        return [obj.x, obj.y]
    if isinstance(obj, Segment):
        return _numbers_of(obj.a) + _numbers_of(obj.b)
    if isinstance(obj, Ray):
        return _numbers_of(obj.origin) + _numbers_of(obj.through)
    if isinstance(obj, Line):
        return _numbers_of(obj.p) + _numbers_of(obj.q)
    if isinstance(obj, Vector):
        return _numbers_of(obj.start) + _numbers_of(obj.end)
    if isinstance(obj, Circle | Arc):
        return [*_numbers_of(obj.center), obj.radius]
    if isinstance(obj, Polygon):
        return [v for p in obj.vertices for v in _numbers_of(p)]
    if isinstance(obj, Angle):
        return [*_numbers_of(obj.vertex), obj.value]
    return [obj.value]


def execute(source: str, limits: Limits = DEFAULT_LIMITS) -> Execution:
    """Run `source`, returning the scene built and the first error (None if it all ran)."""
    run = _Run(limits)
    lines = source.splitlines()
    if len(lines) > limits.max_lines:
        message = (
            f"program has {len(lines)} lines, over the limit of {limits.max_lines}; "
            "construct only what the problem needs"
        )
        return Execution(run.scene, DSLError(limits.max_lines + 1, "limit", message))
    for number, raw in enumerate(lines, start=1):
        try:
            statement = parse_line(raw, number, limits)
            if statement is not None:
                run.run(statement)
        except DSLFailure as failure:
            return Execution(run.scene, failure.at(number))
    return Execution(run.scene, None)


__all__ = ["Execution", "arg_kind", "execute"]
