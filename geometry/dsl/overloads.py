"""The shape of the command table: argument kinds, overloads, preconditions, calls.

`commands.py` fills the table; the executor resolves a statement's inputs, picks the first
overload whose kinds match, checks its preconditions and calls its realiser.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from geometry.dsl.constructions import kind_name
from geometry.dsl.errors import DSLFailure
from geometry.dsl.expressions import Number
from geometry.dsl.limits import Limits
from geometry.dsl.scene import (
    Angle,
    Arc,
    Circle,
    GeoObject,
    Line,
    Point,
    Polygon,
    Ray,
    Segment,
    Vector,
)

# What an input resolves to: a scene object, or a number (measures become numbers).
Arg = GeoObject | Number
# What a realiser returns per output: an object, a number (stored as a Measure) or None.
Result = GeoObject | Number | None

# Kind name -> the Python types it accepts. Numbers also accept angle objects (their value
# in radians); scalars also accept segments (their length).
KINDS: dict[str, tuple[type, ...]] = {
    "point": (Point,),
    "segment": (Segment,),
    "ray": (Ray,),
    "line": (Line,),
    "circle": (Circle,),
    "arc": (Arc,),
    "polygon": (Polygon,),
    "angle": (Angle,),
    "vector": (Vector,),
    "linear": (Line, Segment, Ray),
    "round": (Circle, Arc),
    "curve": (Line, Segment, Ray, Circle, Arc),
    "object": (Point, Segment, Ray, Line, Circle, Arc, Polygon, Vector),
    "number": (Number, Angle),
    "scalar": (Number, Angle, Segment),
    "any": (Point, Segment, Ray, Line, Circle, Arc, Polygon, Angle, Vector, Number),
}


def arg_kind(arg: Arg) -> str:
    """The kind word used in messages for a resolved input."""
    return "number" if isinstance(arg, Number) else kind_name(arg)


def as_number(arg: Arg) -> Number:
    """A number, angle or segment input as a Number (angles in radians, segments by length)."""
    if isinstance(arg, Number):
        return arg
    if isinstance(arg, Angle):
        return Number(arg.value, is_angle=True)
    if isinstance(arg, Segment):
        return Number(arg.a.distance(arg.b))
    raise DSLFailure("bad_overload", f"a {arg_kind(arg)} is not a number")


@dataclass
class Call:
    """One statement being executed: its resolved inputs and what the realiser may need."""

    command: str
    args: list[Arg]
    labels: tuple[str, ...]  # the inputs as written, for messages
    rng: random.Random  # seeded from the statement, for points placed "anywhere on"
    limits: Limits
    const_type: str | None = None
    n_outputs: int = 1  # how many outputs the statement names (some forms have a short one)

    def point(self, i: int) -> Point:
        """Input `i` as a point (the overload's kinds guarantee it is one)."""
        value = self.args[i]
        assert isinstance(value, Point)  # guaranteed by the overload's kinds
        return value

    def number(self, i: int) -> Number:
        """Input `i` as a Number (angles in radians, segments by length)."""
        return as_number(self.args[i])


@dataclass(frozen=True)
class Precondition:
    """A check run before the realiser; `check` returns None or a message."""

    text: str  # shown in docs/dsl.md
    check: Callable[[Call], str | None]


@dataclass(frozen=True)
class Overload:
    """One form of a command: input kinds, output kinds, how many outputs, the realiser."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    realise: Callable[[Call], Sequence[Result]]
    summary: str
    preconditions: tuple[Precondition, ...] = ()
    variadic: bool = False  # the last input kind repeats: at least len(inputs) inputs
    # Allowed output counts for this call; default: exactly len(outputs).
    counts: Callable[[Call], tuple[int, ...]] | None = None
    stores: bool = True  # False: outputs are accepted but never stored (`prove`)

    def signature(self, name: str) -> str:
        """This form as documented: `name : input kinds -> output kinds`."""
        ins = " ".join(self.inputs) + (" ..." if self.variadic else "")
        return f"{name} : {ins} -> {' '.join(self.outputs)}".replace(":  ->", ": ->")

    def matches(self, args: Sequence[Arg]) -> bool:
        """Whether `args` fit this form's input kinds (the last repeating when variadic)."""
        if self.variadic:
            if len(args) < len(self.inputs):
                return False
            kinds = list(self.inputs) + [self.inputs[-1]] * (len(args) - len(self.inputs))
        else:
            if len(args) != len(self.inputs):
                return False
            kinds = list(self.inputs)
        return all(isinstance(a, KINDS[k]) for a, k in zip(args, kinds, strict=True))

    def allowed_counts(self, call: Call) -> tuple[int, ...]:
        """How many outputs a statement may name for this call."""
        return self.counts(call) if self.counts is not None else (len(self.outputs),)


@dataclass(frozen=True)
class Command:
    """A DSL command: its name and overloads, tried in order."""

    name: str
    overloads: tuple[Overload, ...]
    doc: str = ""
    examples: tuple[str, ...] = field(default_factory=tuple)

    def select(self, args: Sequence[Arg], labels: Sequence[str]) -> Overload:
        """The first overload matching `args`, or a bad_overload failure listing them all."""
        for overload in self.overloads:
            if overload.matches(args):
                return overload
        given = ", ".join(f"{lab} ({arg_kind(a)})" for lab, a in zip(labels, args, strict=True))
        forms = "; ".join(o.signature(self.name) for o in self.overloads)
        raise DSLFailure(
            "bad_overload",
            f"{self.name} does not take ({given or 'no inputs'}); its forms are: {forms}",
        )
