"""Answer formats: bounded grammars, JSON schemas, strict parsing and the paper's scoring.

Scoring follows the NoReGeo paper: choices by exact match; numbers within +-0.5; points only
if both coordinates are within +-0.5; anything that is not valid JSON with the right keys is
invalid and wrong. Tolerance checks use exact decimal arithmetic on the texts, so 0.5 off is
right and 0.5001 off is wrong whatever binary floats would round to.

Parsing is bounded, so no model output can raise or yield an infinite error: texts longer
than MAX_ANSWER_CHARS, JSON nested deeper than MAX_JSON_DEPTH and numbers beyond
MAX_ANSWER_MAGNITUDE are invalid answers, never exceptions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import ROUND_05UP, Context, Decimal, DecimalException
from typing import Any

from geometry.thresholds import ANSWER_TOLERANCE

# Bounds of the number grammar: weak models otherwise emit digits until max_tokens.
MAX_INT_DIGITS = 4
MAX_FRAC_DIGITS = 4
# The largest magnitude the number grammar can express (9999.9999); JSON schemas sent to
# engines without a grammar carry it as minimum/maximum.
GRAMMAR_MAX = Decimal("9" * MAX_INT_DIGITS + "." + "9" * MAX_FRAC_DIGITS)
# Numbers beyond this are invalid answers. Every true answer lies within the grammar's
# range, so nothing larger can be right, and bounding answers keeps the squared error of a
# point (1e300 would square to inf) and every float conversion finite.
MAX_ANSWER_MAGNITUDE = Decimal(10) ** 6
# A valid answer is a few dozen characters; longer texts are refused before JSON parsing,
# which bounds the parser's time and the digits of every number.
MAX_ANSWER_CHARS = 4096
# A valid answer is one flat object (depth 1); Python's JSON parser recurses per level and
# raises RecursionError near 1,000, so deeper texts are refused before it runs.
MAX_JSON_DEPTH = 16


def _bounded_digits(n: int) -> str:
    """EBNF for 1..n digits, nested so the grammar itself enforces the bound."""
    rule = "[0-9]"
    for _ in range(n - 1):
        rule = f"[0-9] ({rule})?"
    return rule


# JSON forbids leading zeros ("0120"), so the integer part is "0" or starts with 1-9.
_NUMBER_RULE = (
    f'number ::= "-"? ("0" | [1-9] ({_bounded_digits(MAX_INT_DIGITS - 1)})?) '
    f'("." ({_bounded_digits(MAX_FRAC_DIGITS)}))?'
)


def _json_string(text: str) -> str:
    """An EBNF terminal for the JSON text of `text`, quotes included."""
    return json.dumps(json.dumps(text))


def grammar_for(answer_type: str, options: list[str] | tuple[str, ...] = ()) -> str:
    """The bounded EBNF grammar (xgrammar / vLLM `structured_outputs.grammar`) of an answer.

    >>> print(grammar_for("choice", ["yes", "no"]).splitlines()[0])
    root ::= "{" ws "\\"answer\\"" ws ":" ws ("\\"yes\\"" | "\\"no\\"") ws "}"
    """
    key = _json_string
    if answer_type == "choice":
        if not options:
            raise ValueError("a choice answer needs options")
        alternatives = " | ".join(_json_string(o) for o in options)
        root = f'root ::= "{{" ws {key("answer")} ws ":" ws ({alternatives}) ws "}}"'
        return f'{root}\nws ::= " "?'
    if answer_type == "number":
        root = f'root ::= "{{" ws {key("answer")} ws ":" ws number ws "}}"'
    elif answer_type == "point":
        root = (
            f'root ::= "{{" ws {key("x")} ws ":" ws number ws "," ws '
            f'{key("y")} ws ":" ws number ws "}}"'
        )
    else:
        raise ValueError(f"unknown answer type {answer_type!r}; valid: choice, number, point")
    return f'{root}\n{_NUMBER_RULE}\nws ::= " "?'


def json_schema_for(answer_type: str, options: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON schema of the answer object, for OpenAI-compatible `response_format`."""
    # Bounded like the grammar: an API model is asked for nothing the grammar would forbid.
    number = {"type": "number", "minimum": -float(GRAMMAR_MAX), "maximum": float(GRAMMAR_MAX)}
    if answer_type == "choice":
        properties: dict[str, Any] = {"answer": {"type": "string", "enum": list(options)}}
    elif answer_type == "number":
        properties = {"answer": number}
    elif answer_type == "point":
        properties = {"x": number, "y": number}
    else:
        raise ValueError(f"unknown answer type {answer_type!r}; valid: choice, number, point")
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Parsed:
    """A model output read under its answer schema; `value` is None when invalid."""

    value: str | Decimal | tuple[Decimal, Decimal] | None
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the output parsed under its schema (no error)."""
        return self.error is None


class _Rejected(ValueError):
    """A JSON value the parser refuses to build (NaN, an exponent beyond Decimal's range)."""


def _reject_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not a valid answer number")


def _json_decimal(text: str) -> Decimal:
    """JSON number text as an exact Decimal. Exponents libmpdec cannot hold (1e99999999999999999999)
    raise DecimalException, which json.loads would pass on as a crash."""
    try:
        return Decimal(text)
    except DecimalException:
        raise _Rejected(f"number {text[:40]} is out of range") from None


# One decoder for every answer: json.loads with hooks builds a new one per call.
_DECODER = json.JSONDecoder(
    parse_float=_json_decimal, parse_int=_json_decimal, parse_constant=_reject_constant
)


def _json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text`, brackets inside strings aside."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _strict_number(value: Any) -> Decimal:
    if not isinstance(value, Decimal):
        # bools are ints in Python and strings are not numbers: both are invalid answers.
        raise ValueError(f"expected a JSON number, got {type(value).__name__}")
    if not value.is_finite():
        raise ValueError("number is not finite")
    # copy_abs, unlike abs(), applies no context, so 1e1000000 cannot raise Overflow here.
    if value.copy_abs() > MAX_ANSWER_MAGNITUDE:
        raise ValueError(f"number {value:.6e} is outside +-{MAX_ANSWER_MAGNITUDE:.0e}")
    return value


def read_number(text: str) -> Decimal | None:
    """A number typed as plain text ("12.5", "-3", "1e2"), bounded like a JSON answer's
    numbers: None when it is no finite number, too long, or beyond MAX_ANSWER_MAGNITUDE.

    >>> read_number(" 12.50 "), read_number("1e200"), read_number("nan")
    (Decimal('12.50'), None, None)
    """
    text = text.strip()
    if len(text) > MAX_ANSWER_CHARS:
        return None
    try:
        return _strict_number(_json_decimal(text))
    except ValueError:
        return None


def parse_answer(
    text: str | None, answer_type: str, options: list[str] | tuple[str, ...] = ()
) -> Parsed:
    """Read `text` strictly: only a JSON object with exactly the answer's keys is valid.

    >>> parse_answer('{"answer": "yes"}', "choice", ["yes", "no"]).value
    'yes'
    >>> parse_answer('{"answer": "Yes"}', "choice", ["yes", "no"]).error
    "'Yes' is not one of the options yes, no"
    >>> parse_answer('{"x": 1.5, "y": -2}', "point").value
    (Decimal('1.5'), Decimal('-2'))
    >>> parse_answer('{"answer": NaN}', "number").error
    'NaN is not a valid answer number'
    >>> parse_answer('{"answer": 1e200}', "number").error
    'number 1.000000e+200 is outside +-1e+6'
    """
    if text is None or not text.strip():
        return Parsed(None, "empty output")
    text = text.strip()
    if len(text) > MAX_ANSWER_CHARS:
        return Parsed(None, f"output of {len(text)} characters exceeds {MAX_ANSWER_CHARS}")
    # Counting brackets is C-fast; only texts with enough of them need the scan.
    brackets = text.count("[") + text.count("{")
    if brackets > MAX_JSON_DEPTH and (depth := _json_depth(text)) > MAX_JSON_DEPTH:
        return Parsed(None, f"JSON nested {depth} deep exceeds {MAX_JSON_DEPTH}")
    try:
        obj = _DECODER.decode(text)
    except _Rejected as err:
        return Parsed(None, str(err))
    except ValueError as err:  # JSONDecodeError
        return Parsed(None, f"not valid JSON: {err}")
    if not isinstance(obj, dict):
        return Parsed(None, f"expected a JSON object, got {type(obj).__name__}")
    expected = {"x", "y"} if answer_type == "point" else {"answer"}
    if set(obj) != expected:
        return Parsed(None, f"expected keys {sorted(expected)}, got {sorted(obj)}")
    try:
        if answer_type == "choice":
            value = obj["answer"]
            if not isinstance(value, str) or value not in options:
                return Parsed(None, f"{value!r} is not one of the options {', '.join(options)}")
            return Parsed(value)
        if answer_type == "number":
            return Parsed(_strict_number(obj["answer"]))
        if answer_type == "point":
            return Parsed((_strict_number(obj["x"]), _strict_number(obj["y"])))
    except ValueError as err:
        return Parsed(None, str(err))
    raise ValueError(f"unknown answer type {answer_type!r}; valid: choice, number, point")


@dataclass(frozen=True)
class Score:
    """Correctness and error of one parsed answer against the item's `answer` JSON."""

    correct: bool
    abs_error: float | None  # numbers: |d|; points: Euclidean distance; else None
    sq_error: float | None  # numbers: d^2; points: mean of dx^2 and dy^2; else None


# Differences are rounded to 50 digits with ROUND_05UP, which never rounds an inexact result
# onto a number with fewer digits: a difference just above 0.5 stays above 0.5, so the
# +-0.5 boundary is decided exactly however many digits (1e-999999) an answer carries.
_DIFF_CONTEXT = Context(prec=50, rounding=ROUND_05UP)


def _difference(value: Decimal, truth: Decimal) -> Decimal:
    return _DIFF_CONTEXT.subtract(value, truth).copy_abs()


def _truth(answer_json: str, answer_type: str) -> str | Decimal | tuple[Decimal, Decimal]:
    """The item's answer; items come from our generator, so a malformed one is a bug and
    raises, naming it."""
    try:
        truth = json.loads(answer_json, parse_float=Decimal, parse_int=Decimal)
        if answer_type == "choice" and isinstance(truth["answer"], str):
            return str(truth["answer"])
        if answer_type == "number":
            return _strict_number(truth["answer"])
        if answer_type == "point":
            return (_strict_number(truth["x"]), _strict_number(truth["y"]))
    except (ValueError, TypeError, KeyError):
        pass
    raise ValueError(f"item answer {answer_json[:200]!r} is not a {answer_type} answer")


def score_answer(parsed: Parsed, answer_json: str, answer_type: str) -> Score:
    """Score against the item's `answer` column; invalid answers are wrong."""
    if not parsed.valid:
        return Score(False, None, None)
    truth = _truth(answer_json, answer_type)
    if answer_type == "choice":
        return Score(parsed.value == truth, None, None)
    if answer_type == "number":
        assert isinstance(parsed.value, Decimal) and isinstance(truth, Decimal)
        diff = _difference(parsed.value, truth)
        return Score(diff <= ANSWER_TOLERANCE, float(diff), float(diff) ** 2)
    assert isinstance(parsed.value, tuple) and isinstance(truth, tuple)
    dx = _difference(parsed.value[0], truth[0])
    dy = _difference(parsed.value[1], truth[1])
    correct = dx <= ANSWER_TOLERANCE and dy <= ANSWER_TOLERANCE
    fx, fy = float(dx), float(dy)
    return Score(correct, math.hypot(fx, fy), (fx * fx + fy * fy) / 2)
