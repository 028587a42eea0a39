"""Expression evaluation: precedence, angles and units, limits, and clear failures."""

from __future__ import annotations

import math

import pytest

from geometry.dsl.errors import DSLFailure
from geometry.dsl.expressions import Number, evaluate
from geometry.dsl.limits import DEFAULT_LIMITS, Limits


def value(text: str, limits: Limits = DEFAULT_LIMITS, **labels: float) -> float:
    return evaluate(text, lambda name: _lookup(labels, name), limits).value


def _lookup(labels: dict[str, float], name: str) -> Number | None:
    return Number(labels[name]) if name in labels else None


def failure(text: str, limits: Limits = DEFAULT_LIMITS) -> DSLFailure:
    with pytest.raises(DSLFailure) as caught:
        evaluate(text, lambda name: None, limits)
    return caught.value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2+3*4", 14.0),
        ("(2+3)*4", 20.0),
        ("10-4-3", 3.0),  # left associative
        ("8/4/2", 1.0),
        ("2^3^2", 512.0),  # right associative
        ("2**3", 8.0),
        ("-2^2", -4.0),  # power binds tighter than unary minus, as in maths
        ("2*-3", -6.0),
        ("--3", 3.0),
        ("1.5e2", 150.0),
        (".5+.25", 0.75),
        ("( 100 + 50 ) / 3", 50.0),
        ("2×3−1", 5.0),  # textbook look-alikes
        ("sqrt(16)+abs(-2)", 6.0),
    ],
)
def test_arithmetic_precedence(text: str, expected: float) -> None:
    assert value(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cos(60°)", 0.5),
        ("sin(30deg)", 0.5),
        ("cos(60)", 0.5),  # a plain number in a trig function is degrees (public prompts)
        ("cos(pi/3)", 0.5),  # pi is an angle, so pi/3 is radians
        ("cos(π/3)", 0.5),
        ("sin(0.5rad)", math.sin(0.5)),
        ("sin(0.5r)", math.sin(0.5)),
        ("tan(45°)", 1.0),
        ("100*cos(45°)", 100 / math.sqrt(2)),
        ("sin(2*15°)", 0.5),
        ("cos((20+40)°)", 0.5),
    ],
)
def test_trigonometry_and_units(text: str, expected: float) -> None:
    assert value(text) == pytest.approx(expected)


def test_angle_literals_are_radians_and_tagged() -> None:
    result = evaluate("45°", lambda name: None, DEFAULT_LIMITS)
    assert result == Number(math.pi / 4, is_angle=True)
    inverse = evaluate("acos(0.5)", lambda name: None, DEFAULT_LIMITS)
    assert inverse.is_angle and inverse.radians() == pytest.approx(math.pi / 3)
    assert Number(90).radians() == pytest.approx(math.pi / 2)  # plain means degrees


def test_adding_angle_to_plain_number_is_rejected() -> None:
    err = failure("30°+10")
    assert err.category == "syntax"
    assert "30°+10°" in err.message


def test_labels_resolve_and_undefined_labels_are_named() -> None:
    assert value("r/2+1", r=10.0) == 6.0
    err = failure("radius*2")
    assert err.category == "undefined_label"
    assert "radius" in err.message


def test_nesting_limit_boundary() -> None:
    tight = Limits(max_expression_depth=3)
    assert value("(((1)))", tight) == 1.0
    err = failure("((((1))))", tight)
    assert err.category == "limit" and "nested" in err.message
    assert failure("-" * 40 + "1").category == "limit"  # unary signs count too


def test_magnitude_limit_on_literals_and_intermediates() -> None:
    small = Limits(max_abs_number=1000)
    assert value("1000", small) == 1000.0
    assert value("-1000", small) == -1000.0
    assert failure("1001", small).category == "limit"
    assert failure("999+2-500", small).category == "limit"  # intermediate 1001
    assert failure("10^10^10").category == "limit"
    assert failure("tan(90°)").category == "limit"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1/0", "division by zero"),
        ("5/(2-2)", "division by zero"),
        ("sqrt(-1)", "negative"),
        ("acos(2)", "[-1, 1]"),
        ("(-8)^0.5", "fractional power"),
    ],
)
def test_undefined_values_are_geometric_errors(text: str, words: str) -> None:
    err = failure(text)
    assert err.category == "geometric"
    assert words in err.message


@pytest.mark.parametrize("text", ["2+", "cos 30", "cos(30", "(1))", "3 $ 4", "", "x°", "30°°"])
def test_malformed_expressions_are_syntax_errors(text: str) -> None:
    err = failure(text)
    assert err.category in ("syntax", "undefined_label")
    if text not in ("x°",):
        assert err.category == "syntax"
