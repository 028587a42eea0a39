"""Errors of the GeoBuild DSL: one record per failed program, in words a model can act on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ErrorCategory = Literal[
    "syntax",
    "undefined_label",
    "duplicate_label",
    "unknown_command",
    "bad_overload",
    "output_count",
    "geometric",
    "limit",
]

# The categories in the order reports list them.
ERROR_CATEGORIES: tuple[ErrorCategory, ...] = (
    "syntax",
    "undefined_label",
    "duplicate_label",
    "unknown_command",
    "bad_overload",
    "output_count",
    "geometric",
    "limit",
)


@dataclass(frozen=True)
class DSLError:
    """The first error of a program: its 1-based line, its category and an actionable message."""

    line: int
    category: ErrorCategory
    message: str

    def __str__(self) -> str:
        return f"line {self.line} [{self.category}]: {self.message}"


class DSLFailure(Exception):
    """Raised inside the parser and commands; the executor adds the line number.

    Kept apart from `DSLError` so the code that detects a problem need not know which
    line it is on, and so `DSLError` stays a plain value that pickles across Ray workers.
    """

    def __init__(self, category: ErrorCategory, message: str) -> None:
        super().__init__(message)
        self.category: ErrorCategory = category
        self.message = message

    def at(self, line: int) -> DSLError:
        """This failure as the error of `line`."""
        return DSLError(line=line, category=self.category, message=self.message)
