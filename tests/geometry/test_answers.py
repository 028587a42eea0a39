"""Answer grammars, strict parsing and the paper's scoring rules, boundaries included."""

from __future__ import annotations

import json

import pytest

from geometry.answers import Score, grammar_for, json_schema_for, parse_answer, score_answer

YES_NO = ["yes", "no"]
THREE = ["median", "altitude", "bisector"]


def score(text: str, truth: dict, answer_type: str, options: list[str] | None = None) -> bool:
    parsed = parse_answer(text, answer_type, options or [])
    return score_answer(parsed, json.dumps(truth), answer_type).correct


@pytest.mark.parametrize(
    ("pred", "truth", "correct"),
    [
        (12.0, 12.5, True),  # exactly 0.5 below
        (13.0, 12.5, True),  # exactly 0.5 above
        (13.0001, 12.5, False),
        (11.9999, 12.5, False),
        (1.6, 1.1, True),  # 1.6 - 1.1 is 0.5000000000000001 in binary floats
        (0.6, 0.1, True),
        (-2.5, -3.0, True),
        (-2.4999, -3.0, False),
    ],
)
def test_number_tolerance_is_inclusive_half(pred: float, truth: float, correct: bool) -> None:
    assert score(f'{{"answer": {pred}}}', {"answer": truth}, "number") is correct


@pytest.mark.parametrize(
    ("x", "y", "correct"),
    [
        ("1.0", "2.5", True),  # dx = 0.5, dy = 0
        ("1.0", "3.0", True),  # both exactly 0.5 off
        ("1.0", "3.0001", False),  # y just outside
        ("0.9999", "2.5", False),  # x just outside, y exact
        ("1.5", "2.5", True),
    ],
)
def test_point_needs_both_coordinates_within_half(x: str, y: str, correct: bool) -> None:
    assert score(f'{{"x": {x}, "y": {y}}}', {"x": 1.5, "y": 2.5}, "point") is correct


def test_point_errors_are_euclidean_and_mean_squared() -> None:
    parsed = parse_answer('{"x": 4, "y": 6}', "point")
    result = score_answer(parsed, json.dumps({"x": 1.0, "y": 2.0}), "point")
    assert result.abs_error == pytest.approx(5.0)
    assert result.sq_error == pytest.approx((9 + 16) / 2)
    assert result.correct is False


@pytest.mark.parametrize(
    ("text", "answer_type", "options"),
    [
        ('{"answer": "yes"', "choice", YES_NO),  # truncated
        ('The answer is {"answer": "yes"}', "choice", YES_NO),  # prose before
        ('{"answer": "yes"} because', "choice", YES_NO),  # prose after
        ('```json\n{"answer": "yes"}\n```', "choice", YES_NO),  # fenced
        ('{"answer": "Yes"}', "choice", YES_NO),  # wrong case
        ('{"answer": " yes"}', "choice", YES_NO),  # not exactly an option
        ('{"answer": "maybe"}', "choice", YES_NO),
        ('{"answer": "Median"}', "choice", THREE),
        ("", "choice", YES_NO),
        ("   ", "number", []),
        ('{"answer": NaN}', "number", []),
        ('{"answer": Infinity}', "number", []),
        ('{"answer": "12"}', "number", []),  # number as string
        ('{"answer": true}', "number", []),
        ('{"answer": null}', "number", []),
        ('{"answer": [12]}', "number", []),
        ('{"value": 12}', "number", []),  # wrong key
        ('{"answer": 12, "why": "x"}', "number", []),  # extra key
        ('{"x": 1}', "point", []),  # missing key
        ('{"x": "1", "y": 2}', "point", []),
        ('{"x": 1, "y": NaN}', "point", []),
        ("[1, 2]", "point", []),
        ("12", "number", []),  # bare number, not an object
    ],
)
def test_malformed_outputs_are_invalid_and_wrong(
    text: str, answer_type: str, options: list[str]
) -> None:
    parsed = parse_answer(text, answer_type, options)
    assert not parsed.valid and parsed.error
    truth = (
        {"x": 1, "y": 2} if answer_type == "point" else {"answer": options[0] if options else 12}
    )
    assert score_answer(parsed, json.dumps(truth), answer_type).correct is False


def test_choice_exact_match() -> None:
    assert score('{"answer": "altitude"}', {"answer": "altitude"}, "choice", THREE)
    assert not score('{"answer": "median"}', {"answer": "altitude"}, "choice", THREE)
    assert score(' {"answer":"no"}\n', {"answer": "no"}, "choice", YES_NO)  # whitespace is fine


def _accepts(grammar: str, text: str) -> bool:
    from xgrammar.testing import _is_grammar_accept_string

    return bool(_is_grammar_accept_string(grammar, text))


@pytest.mark.parametrize(
    ("answer_type", "options", "good", "bad"),
    [
        (
            "choice",
            YES_NO,
            ['{"answer": "yes"}', '{"answer":"no"}'],
            ['{"answer": "Yes"}', '{"answer": 1}'],
        ),
        ("choice", THREE, ['{"answer": "bisector"}'], ['{"answer": "bisect"}']),
        (
            "number",
            [],
            ['{"answer": 12.5}', '{"answer": -9999.9999}', '{"answer": 0}'],
            [
                '{"answer": 12345}',
                '{"answer": 1.23456}',
                '{"answer": "1"}',
                '{"answer": 1e5}',
                '{"answer": 0120}',
                '{"answer": 00}',
            ],
        ),
        (
            "point",
            [],
            ['{"x": 1.5, "y": -2}'],
            ['{"y": 1, "x": 2}', '{"x": 1}', '{"x": 1, "y": 00000}'],
        ),
    ],
)
def test_grammar_is_bounded_and_matches_the_parser(
    answer_type: str, options: list[str], good: list[str], bad: list[str]
) -> None:
    grammar = grammar_for(answer_type, options)
    for text in good:
        assert _accepts(grammar, text), text
        assert parse_answer(text, answer_type, options).valid, text
    for text in bad:
        assert not _accepts(grammar, text), text


def test_json_schema_lists_options_and_keys() -> None:
    schema = json_schema_for("choice", YES_NO)
    assert schema["properties"]["answer"]["enum"] == YES_NO
    assert json_schema_for("point")["required"] == ["x", "y"]
    with pytest.raises(ValueError, match="unknown answer type"):
        json_schema_for("essay")


def test_json_schema_bounds_numbers_like_the_grammar() -> None:
    grammar = grammar_for("number")
    for schema in (json_schema_for("number")["properties"]["answer"],) + tuple(
        json_schema_for("point")["properties"].values()
    ):
        assert schema == {"type": "number", "minimum": -9999.9999, "maximum": 9999.9999}
        # The bounds themselves are answers the grammar allows; one digit more is not.
        assert _accepts(grammar, f'{{"answer": {schema["maximum"]}}}')
        assert _accepts(grammar, f'{{"answer": {schema["minimum"]}}}')
        assert not _accepts(grammar, '{"answer": 10000}')
    for answer_type in ("choice", "number", "point"):
        schema = json_schema_for(answer_type, YES_NO)
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])


@pytest.mark.parametrize(
    ("text", "answer_type", "error"),
    [
        ('{"answer": 1e200}', "number", "outside"),  # crashed scoring with OverflowError
        ('{"answer": -1e200}', "number", "outside"),
        ('{"answer": 1.4e154}', "number", "outside"),  # its square overflows a float
        ('{"answer": 1e1000000}', "number", "outside"),  # exponent beyond Decimal's Emax
        ('{"answer": 1e99999999999999999999}', "number", "out of range"),  # beyond libmpdec
        ('{"answer": 1000000.0001}', "number", "outside"),
        ('{"x": 1e300, "y": 2}', "point", "outside"),  # squared error was inf
        ('{"x": 1, "y": -1e300}', "point", "outside"),
        ("[" * 1000 + "]" * 1000, "number", "nested 1000 deep"),  # RecursionError before
        ('{"answer": ' + "[" * 1000 + "]" * 1000 + "}", "number", "nested 1001 deep"),
        ('{"answer": 1' + " " * 5000 + "}", "number", "exceeds 4096"),
    ],
)
def test_extreme_answers_are_invalid_not_errors(text: str, answer_type: str, error: str) -> None:
    parsed = parse_answer(text, answer_type)
    assert not parsed.valid
    assert error in str(parsed.error)
    truth = {"x": 1, "y": 2} if answer_type == "point" else {"answer": 12}
    assert score_answer(parsed, json.dumps(truth), answer_type) == Score(False, None, None)


def test_bounds_are_inclusive_and_brackets_in_strings_are_not_nesting() -> None:
    at_bound = parse_answer('{"answer": -1e6}', "number")
    assert at_bound.valid
    result = score_answer(at_bound, json.dumps({"answer": 0}), "number")
    assert (result.correct, result.abs_error, result.sq_error) == (False, 1e6, 1e12)
    point = score_answer(
        parse_answer('{"x": 1e6, "y": -1e6}', "point"), '{"x": 0, "y": 0}', "point"
    )
    assert point.sq_error == 1e12 and point.abs_error == pytest.approx(2**0.5 * 1e6)
    # 1000 brackets inside a string are text, not depth: the answer is just not an option.
    parsed = parse_answer(json.dumps({"answer": "[" * 1000}), "choice", YES_NO)
    assert "not one of the options" in str(parsed.error)


@pytest.mark.parametrize(
    ("pred", "correct"),
    [
        ("2.5" + "0" * 60 + "1", False),  # 1e-61 beyond 0.5: more digits than any context
        ("2.5" + "0" * 60, True),
        ("1.5" + "0" * 60 + "1", True),
        ("1.4" + "9" * 60, False),
        ("1e-999999", False),  # 2 off; a tiny exponent is a valid, finite number
    ],
)
def test_boundary_is_exact_however_many_digits(pred: str, correct: bool) -> None:
    assert score(f'{{"answer": {pred}}}', {"answer": 2}, "number") is correct


def test_tiny_numbers_score_as_zero_without_underflow() -> None:
    result = score_answer(
        parse_answer('{"answer": 1e-999999999}', "number"), '{"answer": 0.3}', "number"
    )
    assert result.correct and result.abs_error == pytest.approx(0.3)


def test_a_malformed_item_answer_raises_naming_it() -> None:
    with pytest.raises(ValueError, match="item answer '{\"answer\": 1e400}'"):
        score_answer(parse_answer('{"answer": 1}', "number"), '{"answer": 1e400}', "number")
