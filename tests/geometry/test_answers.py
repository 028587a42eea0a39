"""Answer grammars, strict parsing and the paper's scoring rules, boundaries included."""

from __future__ import annotations

import json

import pytest

from geometry.answers import grammar_for, json_schema_for, parse_answer, score_answer

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
