"""Program forms the public GeoBuildBench code refuses where our executor runs them.

From the public parser (`parse_command` in `src/core/random_constr.py`, ooongs/GeoBuildBench
5a31908; read for facts, no code taken over). Its executor strips `#` and `//` comments,
then reads each line as whitespace-separated tokens:

- `const TYPE VALUE -> LABEL`: exactly five tokens, TYPE one of int, AngleSize, Measure;
- otherwise `command : inputs -> outputs`, the colon the second token, at least one input
  and one output (so `point : -> A`, a free point here, is refused there);
- an input is a label defined on an earlier line, or a literal: a number (a trailing `°`,
  `rad` or `r` allowed), `cos(30)`-style trigonometry, or an expression of digits,
  `+ - * /`, parentheses and `e` with those functions, written without spaces (no `sqrt`,
  `pi` or `^`, which ours reads);
- `polygon` returns the polygon and one segment per side (the regular n-gon form
  `polygon : A B n` adds its n-2 new vertices), and any other output count is refused.

Its validator then reads the program again, stripping only `#` comments, so a `//` comment
that the executor ignored makes the validator raise (scores 0/0).

Whether a command accepts its inputs' kinds is not checked here: our executor and the public
one share the command set, and the differential fixture is what shows where they part.
"""

from __future__ import annotations

import ast
import math
import re

PUBLIC_CONST_TYPES = ("int", "AngleSize", "Measure")
_TRIG = re.compile(r"(cos|sin|tan)\(([+-]?[\d.]+)(°|deg|rad|r)?\)", re.IGNORECASE)
_TRIG_ALONE = re.compile(r"^(cos|sin|tan)\(([+-]?[\d.]+)(°|deg|rad|r)?\)$", re.IGNORECASE)
_EXPRESSION_CHARS = frozenset("0123456789.+-*/()eE")
_ARITHMETIC = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _expression(token: str) -> bool:
    """An arithmetic expression the public evaluator takes (parsed here, never evaluated)."""
    text = _TRIG.sub("1", token).replace("°", "")
    if not text or any(c not in _EXPRESSION_CHARS for c in text):
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return False
    return all(isinstance(node, _ARITHMETIC) for node in ast.walk(tree))


def public_literal(token: str) -> bool:
    """Whether the public parser reads `token` (not a defined label) as a number."""
    if (any(op in token for op in "*+-/()") or _TRIG.search(token)) and _expression(token):
        return True
    if _TRIG_ALONE.match(token):
        return True
    for suffix in ("°", "rad", "r"):
        if token.endswith(suffix):
            return _parses(token[: -len(suffix)])
    return _parses(token)


def _parses(text: str) -> bool:
    """Python's float() reads it ("inf" and "1e400" included, as the public parser uses it)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _polygon_outputs(inputs: list[str]) -> int:
    sides = _number(inputs[-1])
    return len(inputs) + 1 if sides is None else 2 * int(sides) - 1


def _line_error(tokens: list[str], defined: set[str]) -> str | None:
    if tokens[0] == "const":
        if len(tokens) != 5 or tokens[1] not in PUBLIC_CONST_TYPES or tokens[3] != "->":
            return "the public const form is `const int|AngleSize|Measure VALUE -> LABEL`"
        if not _parses(tokens[2]):
            return f"the public const value must be a plain number, not {tokens[2]!r}"
        defined.add(tokens[4])
        return None
    if len(tokens) < 2 or tokens[1] != ":" or "->" not in tokens:
        return "the public parser needs `command : inputs -> outputs`, spaces around ':'"
    arrow = tokens.index("->")
    inputs, outputs = tokens[2:arrow], tokens[arrow + 1 :]
    if not inputs or not outputs:
        return "the public parser needs at least one input and one output"
    for token in inputs:
        if token not in defined and not public_literal(token):
            return f"the public parser reads {token!r} as neither a label nor a number"
    if tokens[0] == "polygon" and len(outputs) != _polygon_outputs(inputs):
        return (
            f"the public polygon command returns {_polygon_outputs(inputs)} output(s), "
            f"not {len(outputs)}"
        )
    defined.update(o for o in outputs if o != "_")
    return None


def public_form_error(program: str) -> str | None:
    """Why the public executor would refuse `program` (first line that it would), else None."""
    defined: set[str] = set()
    for number, raw in enumerate(program.splitlines(), start=1):
        tokens = raw.split("#", 1)[0].split("//", 1)[0].split()
        if tokens:
            error = _line_error(tokens, defined)
            if error is not None:
                return f"line {number}: {error}"
    return None


def public_validation_error(program: str) -> str | None:
    """Why the public validator would raise on a program its executor ran, else None:
    a `//` comment, which its parser (stripping only `#` comments) reads as a label."""
    for number, raw in enumerate(program.splitlines(), start=1):
        if "//" in raw.split("#", 1)[0]:
            return f"line {number}: '//' comments stop the public validator's parser"
    return None
