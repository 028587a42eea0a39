"""Normalised GeoBuild conditions: what the loader produces and the checks consume.

The data set spells one idea several ways (nested or flat label lists, alternative field
names, lines named by letter or by a phrase). The loader turns every spelling into these
types, so a check reads one shape only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LineRef:
    """A line as the data names it: through two (or more) labelled points, by its own label,
    or by a description (the perpendicular bisector of a segment). Exactly one field is set."""

    through: tuple[str, ...] | None = None
    name: str | None = None
    bisector_of: tuple[str, str] | None = None

    def __str__(self) -> str:
        if self.through is not None:
            return "".join(self.through)
        if self.bisector_of is not None:
            return f"perpendicular bisector of {''.join(self.bisector_of)}"
        return str(self.name)


# A condition argument after normalisation: a label, a tuple of labels, a tuple of label
# tuples, a number, a word, a line, or a tuple of lines.
ArgValue = str | float | LineRef | tuple


@dataclass(frozen=True)
class Condition:
    """One verification condition. `type` is the data set's name; `args` the normalised
    fields (see docs/geobuild.md); `raw` the original JSON for reports; `error` says why the
    data could not be interpreted (such a condition is kept and always fails)."""

    type: str
    args: Mapping[str, ArgValue] = field(default_factory=dict)
    raw: Mapping[str, object] = field(default_factory=dict)
    error: str | None = None

    def text(self, key: str) -> str:
        """The argument `key` as a single label or word."""
        value = self.args[key]
        if not isinstance(value, str):
            raise TypeError(f"{self.type}.{key} is {value!r}, expected a label")
        return value

    def number(self, key: str) -> float:
        """The argument `key` as a number."""
        value = self.args[key]
        if not isinstance(value, float):
            raise TypeError(f"{self.type}.{key} is {value!r}, expected a number")
        return value

    def labels(self, key: str) -> tuple[str, ...]:
        """The argument `key` as a tuple of labels."""
        value = self.args[key]
        if not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
            raise TypeError(f"{self.type}.{key} is {value!r}, expected labels")
        return value

    def groups(self, key: str) -> tuple[tuple[str, ...], ...]:
        """The argument `key` as a tuple of label tuples (segments, angles, circles)."""
        value = self.args[key]
        if not (isinstance(value, tuple) and all(isinstance(v, tuple) for v in value)):
            raise TypeError(f"{self.type}.{key} is {value!r}, expected groups of labels")
        return value

    def line(self, key: str) -> LineRef:
        """The argument `key` as a line reference."""
        value = self.args[key]
        if not isinstance(value, LineRef):
            raise TypeError(f"{self.type}.{key} is {value!r}, expected a line")
        return value

    def lines(self, key: str) -> tuple[LineRef, ...]:
        """The argument `key` as a tuple of line references."""
        value = self.args[key]
        if not (isinstance(value, tuple) and all(isinstance(v, LineRef) for v in value)):
            raise TypeError(f"{self.type}.{key} is {value!r}, expected lines")
        return value

    def describe(self) -> str:
        """A short human-readable form, e.g. `angle_value(angle=AOC, value=100)`."""
        parts = [f"{key}={_show(value)}" for key, value in self.args.items()]
        return f"{self.type}({', '.join(parts)})"


def _show(value: ArgValue) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        if all(isinstance(v, str) for v in value) and all(len(v) <= 2 for v in value):
            return "".join(value)
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)
