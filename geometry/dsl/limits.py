"""Bounds on what one program may ask of the executor.

Programs come from models and are untrusted: a runaway generation must fail fast with a
clear message rather than tie up an executor actor.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Upper bounds checked while parsing and executing a program."""

    max_lines: int = 500  # physical lines, comments and blank lines included
    max_line_chars: int = 1000  # one line, comment included
    max_abs_number: float = 1e6  # every literal, intermediate value and coordinate
    max_expression_depth: int = 32  # nesting of parentheses, unary signs and calls
    max_polygon_sides: int = 100  # polygon vertices, regular n-gons included
    # The public judge runs programs as the public executor does, which draws a polygon
    # whose vertices are collinear (zero area); ours refuses one by default.
    allow_flat_polygons: bool = False


DEFAULT_LIMITS = Limits()
