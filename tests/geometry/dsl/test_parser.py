"""Line parsing: `command : inputs -> outputs`, comments, `_`, const forms, bad lines."""

from __future__ import annotations

import pytest

from geometry.dsl.errors import DSLFailure
from geometry.dsl.limits import DEFAULT_LIMITS, Limits
from geometry.dsl.parser import Statement, parse_line, split_inputs, strip_comment


def parse(text: str, limits: Limits = DEFAULT_LIMITS) -> Statement | None:
    return parse_line(text, 7, limits)


def failure(text: str, limits: Limits = DEFAULT_LIMITS) -> DSLFailure:
    with pytest.raises(DSLFailure) as caught:
        parse_line(text, 1, limits)
    return caught.value


def test_basic_statement() -> None:
    statement = parse("intersect : c seg_AB -> P _")
    assert statement == Statement(
        line=7, command="intersect", inputs=("c", "seg_AB"), outputs=("P", None)
    )


def test_spacing_is_free_around_colon_and_arrow() -> None:
    statement = parse("segment:A B->AB")
    assert statement is not None
    assert (statement.command, statement.inputs, statement.outputs) == (
        "segment",
        ("A", "B"),
        ("AB",),
    )


def test_no_inputs() -> None:
    statement = parse("point :  -> A")
    assert statement is not None and statement.inputs == () and statement.outputs == ("A",)


@pytest.mark.parametrize("text", ["", "   ", "# a comment", "// another", "  # point : 1 2 -> A"])
def test_blank_and_comment_lines_are_skipped(text: str) -> None:
    assert parse(text) is None


def test_trailing_comments_are_removed() -> None:
    for text in ("point : 1 2 -> A  # origin-ish", "point : 1 2 -> A // note"):
        statement = parse(text)
        assert statement is not None and statement.outputs == ("A",)
    assert strip_comment("a # b // c") == "a"
    assert strip_comment("a // b # c") == "a"


def test_parenthesised_inputs_keep_their_spaces() -> None:
    assert split_inputs("(100 + 50) 2*(3 - 1)  B") == ["(100 + 50)", "2*(3 - 1)", "B"]
    statement = parse("point : (50 + 30*cos(45°)) (50+30*sin(45°)) -> Q")
    assert statement is not None and len(statement.inputs) == 2


def test_labels_with_primes() -> None:
    statement = parse("rotate : A 90 O -> A'")
    assert statement is not None and statement.outputs == ("A'",)
    statement = parse("rotate : A 90 O -> B′")
    assert statement is not None and statement.outputs == ("B′",)


@pytest.mark.parametrize(
    ("text", "const_type", "inputs"),
    [
        ("const : 5 -> r", None, ("5",)),
        ("const int 90 -> deg", "int", ("90",)),
        ("const Measure 10 -> length", "Measure", ("10",)),
        ("const AngleSize 1.57 -> a", "AngleSize", ("1.57",)),
        ("const : 2*3 -> six", None, ("2*3",)),
    ],
)
def test_const_forms(text: str, const_type: str | None, inputs: tuple[str, ...]) -> None:
    statement = parse(text)
    assert statement is not None
    assert (statement.command, statement.const_type, statement.inputs) == (
        "const",
        const_type,
        inputs,
    )


def test_commands_that_merely_start_with_const_are_not_const() -> None:
    statement = parse("constant : 1 -> x")
    assert statement is not None and statement.command == "constant"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("point 0 0 -> A", "missing ':'"),
        ("point : 0 0 A", "missing '->'"),
        ("point : 0 0 -> A -> B", "more than one '->'"),
        ("point : 0 0 -> 1A", "not a valid label"),
        ("point : 0 0 -> A+B", "not a valid label"),
        ("point : (1 2 -> A", "unbalanced '('"),
        ("point : 1) 2 -> A", "unbalanced ')'"),
        ("two words : A -> B", "not a command name"),
        ("const banana 3 -> x", "const needs"),
    ],
)
def test_syntax_errors_explain_the_form(text: str, words: str) -> None:
    err = failure(text)
    assert err.category == "syntax"
    assert words in err.message


def test_long_line_is_a_limit_error_at_the_boundary() -> None:
    limits = Limits(max_line_chars=20)
    assert parse("point : 1 2 -> A", limits) is not None  # 16 characters
    assert parse_line("x" * 5 + " : -> A" + " " * 8, 1, limits) is not None  # exactly 20
    err = failure("point : 1 2 -> A # " + "x" * 10, limits)
    assert err.category == "limit"
