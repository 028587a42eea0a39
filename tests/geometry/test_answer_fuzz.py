"""Property tests: no model output makes parsing or scoring raise or yield a non-finite
number (an API model once returned 1e200 and OverflowError killed the whole evaluation).

Hypothesis spends about a millisecond per example and parsing a text takes microseconds,
so each example draws DRAWN independent texts and checks each in CONTEXTS (bare, as an
answer's value, as a point coordinate, as a choice string), one answer type per context in
rotation, so each text meets all three: 5,000 examples x 20 texts = 100,000 drawn inputs per
run, 500,000 parses and 100,000 scored rows (about 90 s here). Derandomized, so CI checks
the same texts every time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geometry.answers import MAX_ANSWER_MAGNITUDE, Score, parse_answer, score_answer
from pipelines.noregeo.scoring import score_row

OPTIONS = {"choice": ["yes", "no"], "number": [], "point": []}
DRAWN = 20
CONTEXTS: tuple[Callable[[str], str], ...] = (
    lambda t: t,
    lambda t: f'{{"answer": {t}}}',
    lambda t: f'{{"x": {t}, "y": 1}}',
    lambda t: f'{{"x": 0,"y":{t} }}',
    lambda t: json.dumps({"answer": t}),
)
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# True answers as the generator writes them: within the grammar's range, a few decimals.
grid_numbers = st.decimals(
    min_value=Decimal("-9999.9999"), max_value=Decimal("9999.9999"), places=4
).map(float)
truths = st.fixed_dictionaries(
    {
        "choice": st.sampled_from(OPTIONS["choice"]).map(lambda a: json.dumps({"answer": a})),
        "number": grid_numbers.map(lambda a: json.dumps({"answer": a})),
        "point": st.tuples(grid_numbers, grid_numbers).map(
            lambda p: json.dumps({"x": p[0], "y": p[1]})
        ),
    }
)


def batches(texts: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(texts, min_size=DRAWN, max_size=DRAWN)


def _finite(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isfinite(value))


def check_one(text: str, answer_type: str, truth: str, with_row: bool) -> None:
    """The invariant: nothing raises; a valid answer has bounded values and finite errors,
    an invalid one has a message and scores as wrong with no error numbers. `with_row`
    also checks pipelines.noregeo.scoring.score_row agrees (once per text: it parses again)."""
    options = OPTIONS[answer_type]
    parsed = parse_answer(text, answer_type, options)
    score = score_answer(parsed, truth, answer_type)
    if not parsed.valid:
        assert parsed.value is None and isinstance(parsed.error, str) and parsed.error
        assert score == Score(False, None, None)
    else:
        assert _finite(score.abs_error) and _finite(score.sq_error)
    if answer_type != "choice" and parsed.valid:
        assert score.abs_error is not None and score.sq_error is not None
        values = parsed.value if isinstance(parsed.value, tuple) else (parsed.value,)
        assert all(isinstance(v, Decimal) and v.copy_abs() <= MAX_ANSWER_MAGNITUDE for v in values)
    if not with_row:
        return
    row = score_row(text, truth, answer_type, options)
    assert (row["valid"], row["parse_error"]) == (parsed.valid, parsed.error)
    assert (row["correct"], row["abs_error"], row["sq_error"]) == (
        score.correct,
        score.abs_error,
        score.sq_error,
    )
    stored = json.loads(row["parsed"]) if row["parsed"] is not None else {}
    assert (row["parsed"] is not None) == parsed.valid
    assert all(math.isfinite(v) for v in stored.values() if isinstance(v, float))


def check(texts: list[str], truth: dict[str, str]) -> None:
    types = list(OPTIONS)
    for i, drawn in enumerate(texts):
        for j, context in enumerate(CONTEXTS):
            text = context(drawn)
            # One answer type per context, rotating, so each text meets all three types
            # across its five contexts; score_row once per text.
            answer_type = types[(i + j) % len(types)]
            try:
                check_one(text, answer_type, truth[answer_type], with_row=j == i % len(CONTEXTS))
            except BaseException as err:
                raise AssertionError(f"{answer_type} answer {text[:300]!r}: {err!r}") from err


@settings(FUZZ, max_examples=1_500)
@given(texts=batches(st.text(max_size=200)), truth=truths)
def test_arbitrary_text(texts: list[str], truth: dict[str, str]) -> None:
    check(texts, truth)


# Hypothesis spends tens of microseconds per draw, so the strategies below draw few values
# and build texts from them: a number text is two or three draws, a token sequence one
# string whose characters stand for tokens.

# Number texts as a model without a grammar might write them: any digits and exponents,
# JSON-valid or not, and the constants json.loads would accept without parse_constant.
number_texts = st.one_of(
    st.text("0123456789.eE+-", min_size=1, max_size=24),
    st.integers(-(10**400), 10**400).map(str),
    st.builds(
        "{}e{}".format,
        st.sampled_from(["1", "-1.4", "9.99", "0.5", "0", "-0"]),
        st.one_of(
            st.integers(-400, 400),
            st.integers(-2_000_000, 2_000_000),
            st.integers(-(10**25), 10**25),
        ),
    ),
    st.floats().map(json.dumps),  # NaN, Infinity and 1e+300 among them
    st.sampled_from(
        ["1e200", "1.4e154", "1e1000000", "NaN", "-Infinity", "1E-999999", "9999.9999", "1e6"]
    ),
)
TOKENS = dict(
    zip(
        "abcdefghijklmnopqrstuvwxyz",
        ["{", "}", "[", "]", ":", ",", " ", '"answer"', '"x"', '"y"', '"yes"', '"no"', "true"]
        + ["null", "NaN", "Infinity", "-", "1e200", "1.4e154", "1e1000000", "0.5", "12", '"']
        + ["\\", "\n", "1E-999999"],
        strict=True,
    )
)
json_ish_texts = st.builds(
    lambda before, number, after: (
        "".join(TOKENS[c] for c in before) + number + "".join(TOKENS[c] for c in after)
    ),
    st.text("".join(TOKENS), max_size=16),
    number_texts,
    st.text("".join(TOKENS), max_size=16),
)


@settings(FUZZ, max_examples=1_500)
@given(texts=batches(json_ish_texts), truth=truths)
def test_json_ish_text(texts: list[str], truth: dict[str, str]) -> None:
    check(texts, truth)


@st.composite
def nested_texts(draw: st.DrawFn) -> str:
    """An answer inside up to 2,000 levels of brackets, balanced or not, or inside a string
    (where brackets are not nesting) or after an escaped quote."""
    opener = draw(st.sampled_from(["[", '{"answer": ', '{"x": ', "[{", '"[', '\\"[']))
    depth = draw(st.integers(0, 2000))
    inner = draw(number_texts)
    closer = "".join({"[": "]", "{": "}"}.get(c, "") for c in reversed(opener))
    return opener * depth + inner + (closer * depth if draw(st.booleans()) else "")


@settings(FUZZ, max_examples=500)
@given(texts=batches(nested_texts()), truth=truths)
def test_deep_nesting(texts: list[str], truth: dict[str, str]) -> None:
    check(texts, truth)


answer_shapes = st.builds(
    str.format,
    st.sampled_from(
        ['{{"answer": {}}}', '{{ "answer" :{} }}', '{{"x": {}, "y": {}}}', '{{"x":{},\n"y":{}}}']
    ),
    number_texts,
    number_texts,
)


@settings(FUZZ, max_examples=1_500)
@given(texts=batches(answer_shapes), truth=truths)
def test_valid_shapes_with_extreme_numbers(texts: list[str], truth: dict[str, str]) -> None:
    check(texts, truth)
