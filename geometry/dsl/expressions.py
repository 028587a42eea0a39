"""Numeric expressions in DSL inputs, evaluated by a recursive-descent parser (no eval).

Grammar (whitespace is ignored inside one input):

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*
    unary   := ("+" | "-") unary | power
    power   := postfix (("^" | "**") unary)?
    postfix := atom unit?
    atom    := NUMBER | NAME | NAME "(" expr ")" | "(" expr ")"
    unit    := "°" | "deg" | "rad" | "r"

Values remember whether they are angles. `30°`, `0.5rad`, `pi`, asin/acos/atan results and
references to angle objects are angles (held in radians). Where a command or a trig function
expects an angle, a plain number means degrees, as in the public GeoBuildBench prompts
(`rotate : B 30 A`, `cos(30)`), so those programs keep their meaning here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from geometry.dsl.errors import DSLFailure
from geometry.dsl.limits import Limits


@dataclass(frozen=True)
class Number:
    """A numeric input: `value`, in radians when `is_angle`."""

    value: float
    is_angle: bool = False

    def radians(self) -> float:
        """The value as an angle: plain numbers are degrees, angles are already radians."""
        return self.value if self.is_angle else math.radians(self.value)


# Returns the number a label stands for, None when no object has that label, and raises
# DSLFailure when the label names an object that is not a number (a point, a circle...).
LabelResolver = Callable[[str], Number | None]

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[^\W\d][\w]*['′]*)
  | (?P<op>\*\*|[-+*/^(),])
    """,
    re.VERBOSE,
)
# Units are tried only right after a number or ')', so labels such as `r` or `deg` still work.
_UNIT = re.compile(r"°|deg(?![\w'′])|rad(?![\w'′])|r(?![\w'′])")
# Look-alike characters models copy from textbooks.
_NORMALISE = str.maketrans({"−": "-", "×": "*", "·": "*", "÷": "/", "π": " pi "})

_CONSTANTS = {"pi": Number(math.pi, is_angle=True)}


def _sqrt(x: Number) -> Number:
    if x.value < 0:
        raise DSLFailure("geometric", f"sqrt of a negative number ({x.value:g})")
    return Number(math.sqrt(x.value))


def _inverse(name: str, fn: Callable[[float], float], bounded: bool) -> Callable[[Number], Number]:
    def apply(x: Number) -> Number:
        if bounded and not -1.0 <= x.value <= 1.0:
            raise DSLFailure(
                "geometric", f"{name}({x.value:g}) is undefined: the argument must be in [-1, 1]"
            )
        return Number(fn(x.value), is_angle=True)

    return apply


_FUNCTIONS: dict[str, Callable[[Number], Number]] = {
    "sin": lambda x: Number(math.sin(x.radians())),
    "cos": lambda x: Number(math.cos(x.radians())),
    "tan": lambda x: Number(math.tan(x.radians())),
    "asin": _inverse("asin", math.asin, bounded=True),
    "acos": _inverse("acos", math.acos, bounded=True),
    "atan": _inverse("atan", math.atan, bounded=False),
    "sqrt": _sqrt,
    "abs": lambda x: Number(abs(x.value), x.is_angle),
}
CONSTANT_NAMES: tuple[str, ...] = tuple(_CONSTANTS)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        after_value = bool(tokens) and (tokens[-1][0] == "number" or tokens[-1][1] == ")")
        unit = _UNIT.match(text, pos) if after_value else None
        if unit is not None:
            tokens.append(("unit", unit.group()))
            pos = unit.end()
            continue
        match = _TOKEN.match(text, pos)
        if match is None:
            raise DSLFailure(
                "syntax",
                f"unexpected character {text[pos]!r} in expression {text!r}; "
                "expressions use numbers, + - * / ^ ( ), sin cos tan asin acos atan sqrt abs, "
                "pi, units ° deg rad, and labels of measures",
            )
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append((kind, match.group()))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, resolve: LabelResolver, limits: Limits) -> None:
        self.text = text
        self.tokens = _tokenize(text.translate(_NORMALISE))
        self.pos = 0
        self.depth = 0
        self.resolve = resolve
        self.limits = limits

    # -- helpers ---------------------------------------------------------------
    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _accept(self, *ops: str) -> str | None:
        token = self._peek()
        if token is not None and token[0] in ("op", "unit") and token[1] in ops:
            self.pos += 1
            return token[1]
        return None

    def _fail(self, what: str) -> DSLFailure:
        return DSLFailure("syntax", f"{what} in expression {self.text!r}")

    def _checked(self, number: Number) -> Number:
        if math.isnan(number.value):
            raise DSLFailure("geometric", f"expression {self.text!r} has no value (NaN)")
        if abs(number.value) > self.limits.max_abs_number:
            raise DSLFailure(
                "limit",
                f"expression {self.text!r} reaches {number.value:g}, beyond the limit of "
                f"±{self.limits.max_abs_number:g}",
            )
        return number

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > self.limits.max_expression_depth:
            raise DSLFailure(
                "limit",
                f"expression {self.text[:60]!r} is nested deeper than "
                f"{self.limits.max_expression_depth} levels",
            )

    # -- grammar ---------------------------------------------------------------
    def parse(self) -> Number:
        if not self.tokens:
            raise self._fail("empty expression")
        value = self._expr()
        if self._peek() is not None:
            raise self._fail(f"unexpected {self._peek()[1]!r}")  # type: ignore[index]
        return value

    def _expr(self) -> Number:
        left = self._term()
        while (op := self._accept("+", "-")) is not None:
            right = self._term()
            if left.is_angle != right.is_angle:
                raise DSLFailure(
                    "syntax",
                    f"expression {self.text!r} adds an angle to a plain number; give both "
                    "a unit, e.g. 30°+10° or 0.5rad+0.1rad",
                )
            value = left.value + right.value if op == "+" else left.value - right.value
            left = self._checked(Number(value, left.is_angle))
        return left

    def _term(self) -> Number:
        left = self._unary()
        while (op := self._accept("*", "/")) is not None:
            right = self._unary()
            if op == "*":
                left = Number(left.value * right.value, left.is_angle != right.is_angle)
            else:
                if right.value == 0:
                    raise DSLFailure("geometric", f"division by zero in expression {self.text!r}")
                left = Number(left.value / right.value, left.is_angle and not right.is_angle)
            left = self._checked(left)
        return left

    def _unary(self) -> Number:
        op = self._accept("+", "-")
        if op is None:
            return self._power()
        self._enter()
        operand = self._unary()
        self.depth -= 1
        return Number(-operand.value if op == "-" else operand.value, operand.is_angle)

    def _power(self) -> Number:
        base = self._postfix()
        if self._accept("^", "**") is None:
            return base
        self._enter()
        exponent = self._unary()
        self.depth -= 1
        try:
            value = base.value**exponent.value
        except (OverflowError, ZeroDivisionError) as exc:
            raise DSLFailure(
                "limit", f"power in expression {self.text!r} is out of range ({exc})"
            ) from exc
        if isinstance(value, complex):
            raise DSLFailure("geometric", f"negative number to a fractional power in {self.text!r}")
        return self._checked(Number(float(value)))

    def _postfix(self) -> Number:
        kind_before = self._peek()
        number = self._atom()
        token = self._peek()
        if token is None or token[0] != "unit":
            return number
        # Units belong to literals and parenthesised groups: `30°`, `(20+10)°`.
        if kind_before is None or not (kind_before[0] == "number" or kind_before[1] == "("):
            raise self._fail(f"unit {token[1]!r} may only follow a number or ( ... )")
        self.pos += 1
        if number.is_angle:
            raise self._fail(f"second unit {token[1]!r}")
        if token[1] in ("°", "deg"):
            return Number(math.radians(number.value), is_angle=True)
        return Number(number.value, is_angle=True)

    def _atom(self) -> Number:
        token = self._peek()
        if token is None:
            raise self._fail("missing operand at the end")
        kind, text = token
        self.pos += 1
        if kind == "number":
            return self._checked(Number(float(text)))
        if kind == "name":
            if text in _FUNCTIONS and self._accept("(") is not None:
                self._enter()
                argument = self._expr()
                if self._accept(")") is None:
                    raise self._fail(f"missing ')' after the argument of {text}")
                self.depth -= 1
                return self._checked(_FUNCTIONS[text](argument))
            return self._name(text)
        if text == "(":
            self._enter()
            inner = self._expr()
            if self._accept(")") is None:
                raise self._fail("missing ')'")
            self.depth -= 1
            return inner
        raise self._fail(f"unexpected {text!r}")

    def _name(self, name: str) -> Number:
        resolved = self.resolve(name)
        if resolved is not None:
            return self._checked(resolved)
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in _FUNCTIONS:
            raise self._fail(f"function {name} needs an argument in parentheses")
        raise DSLFailure(
            "undefined_label",
            f"expression {self.text!r} uses {name!r}, which is not defined yet; define it "
            f"first (e.g. `const : 5 -> {name}` or a measure such as `distance : A B -> {name}`)",
        )


def evaluate(text: str, resolve: LabelResolver, limits: Limits) -> Number:
    """Evaluate one input expression such as `100*cos(45°)` or `(r+2)/3`.

    >>> from geometry.dsl.limits import DEFAULT_LIMITS
    >>> evaluate("2+3*4", lambda name: None, DEFAULT_LIMITS).value
    14.0
    """
    if len(text) > limits.max_line_chars:
        raise DSLFailure("limit", f"expression is longer than {limits.max_line_chars} characters")
    return _Parser(text, resolve, limits).parse()
