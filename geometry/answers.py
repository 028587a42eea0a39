"""Answer formats: bounded grammars, JSON schemas, strict parsing and the paper's scoring.

Scoring follows the NoReGeo paper: choices by exact match; numbers within +-0.5; points only
if both coordinates are within +-0.5; anything that is not valid JSON with the right keys is
invalid and wrong. Tolerance checks use exact decimal arithmetic on the texts, so 0.5 off is
right and 0.5001 off is wrong whatever binary floats would round to.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from geometry.thresholds import ANSWER_TOLERANCE

# Bounds of the number grammar: weak models otherwise emit digits until max_tokens.
MAX_INT_DIGITS = 4
MAX_FRAC_DIGITS = 4


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
    number = {"type": "number"}
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
        return self.error is None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid answer number")


def _strict_number(value: Any) -> Decimal:
    if not isinstance(value, Decimal):
        # bools are ints in Python and strings are not numbers: both are invalid answers.
        raise ValueError(f"expected a JSON number, got {type(value).__name__}")
    if not value.is_finite():
        raise ValueError("number is not finite")
    return value


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
    """
    if text is None or not text.strip():
        return Parsed(None, "empty output")
    try:
        obj = json.loads(
            text.strip(),
            parse_float=Decimal,
            parse_int=Decimal,
            parse_constant=_reject_constant,
        )
    except ValueError as err:  # JSONDecodeError is a ValueError, and so are rejected constants
        return Parsed(None, str(err) if "valid answer" in str(err) else f"not valid JSON: {err}")
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
    except (ValueError, InvalidOperation) as err:
        return Parsed(None, str(err))
    raise ValueError(f"unknown answer type {answer_type!r}; valid: choice, number, point")


@dataclass(frozen=True)
class Score:
    """Correctness and error of one parsed answer against the item's `answer` JSON."""

    correct: bool
    abs_error: float | None  # numbers: |d|; points: Euclidean distance; else None
    sq_error: float | None  # numbers: d^2; points: mean of dx^2 and dy^2; else None


def _truth(answer_json: str, answer_type: str) -> str | Decimal | tuple[Decimal, Decimal]:
    truth = json.loads(answer_json, parse_float=Decimal, parse_int=Decimal)
    if answer_type == "point":
        return (truth["x"], truth["y"])
    return truth["answer"]


def score_answer(parsed: Parsed, answer_json: str, answer_type: str) -> Score:
    """Score against the item's `answer` column; invalid answers are wrong."""
    if not parsed.valid:
        return Score(False, None, None)
    truth = _truth(answer_json, answer_type)
    if answer_type == "choice":
        return Score(parsed.value == truth, None, None)
    if answer_type == "number":
        assert isinstance(parsed.value, Decimal) and isinstance(truth, Decimal)
        diff = abs(parsed.value - truth)
        return Score(diff <= ANSWER_TOLERANCE, float(diff), float(diff) ** 2)
    assert isinstance(parsed.value, tuple) and isinstance(truth, tuple)
    dx = abs(parsed.value[0] - truth[0])
    dy = abs(parsed.value[1] - truth[1])
    correct = dx <= ANSWER_TOLERANCE and dy <= ANSWER_TOLERANCE
    fx, fy = float(dx), float(dy)
    return Score(correct, math.hypot(fx, fy), (fx * fx + fy * fy) / 2)
