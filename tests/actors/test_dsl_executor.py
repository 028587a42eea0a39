"""The DSL-executor step: errors, verdicts, feedback per mode, figures, batches."""

from __future__ import annotations

import json

import numpy as np
import pytest

from actors.dsl_executor import ENGINE_ERROR, NO_PROGRAM, OUTPUT_COLUMNS, DSLExecutor, judge_reply
from geometry.dsl.dataset import load_problems
from geometry.dsl.public_categories import PUBLIC_KIND
from tests.conftest import SHARED

DATA = SHARED / "geobuildbench"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"GeoBuild data not at {DATA}")

# Problem 367: quadrilateral ABCD inscribed in circle O, angle AOC = 100 degrees.
RIGHT = """point : 0 0 -> O
point : 5 0 -> A
circle : O A -> c
rotate : A 100° O -> C
rotate : A 200° O -> D
rotate : A -60° O -> B
polygon : A B C D -> q AB BC CD DA"""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def problem_367():
    return next(p for p in load_problems(DATA) if p.id == "367")


def _judge(problem, text, mode="full", image=True, engine_error=None):
    return judge_reply(
        problem,
        text,
        engine_error,
        round_number=2,
        max_rounds=4,
        mode=mode,
        with_image=image,
        image_size=128,
    )


def test_right_program_succeeds_without_figure(problem_367) -> None:
    judged = _judge(problem_367, f"```\n{RIGHT}\n```")
    assert judged.success and judged.error_category is None and judged.image is None
    assert "round 2 of 4" in judged.feedback


def test_error_line_category_and_source_line_reach_the_feedback(problem_367) -> None:
    broken = RIGHT.replace("rotate : A 200° O -> D", "rotate A 200° O -> D")
    judged = _judge(problem_367, broken, mode="errors")
    assert (judged.error_line, judged.error_category) == (5, "syntax")
    assert "line 5 [syntax]" in judged.feedback and "> rotate A 200° O -> D" in judged.feedback
    assert not judged.success
    # `errors` mode stops at the error: no missing objects, conditions or figure.
    assert "Missing objects" not in judged.feedback and judged.image is None


def test_conditions_mode_adds_missing_objects_and_failed_conditions(problem_367) -> None:
    partial = "\n".join(RIGHT.splitlines()[:4])  # no B, D, no polygon
    errors = _judge(problem_367, partial, mode="errors").feedback
    conditions = _judge(problem_367, partial, mode="conditions").feedback
    assert "Missing objects" not in errors and "does not satisfy" in errors
    assert "point B" in conditions and "point_on_circle" in conditions
    assert "score" not in conditions


def test_full_mode_adds_scores_and_the_figure(problem_367) -> None:
    partial = "\n".join(RIGHT.splitlines()[:4])
    judged = _judge(problem_367, partial, mode="full")
    assert "Object score" in judged.feedback and "attached image" in judged.feedback
    assert judged.image is not None and judged.image.startswith(PNG_MAGIC)
    text_only = _judge(problem_367, partial, mode="full", image=False)
    assert text_only.image is None and "attached image" not in text_only.feedback


@pytest.mark.parametrize("reply", ["", "I do not know.", "```\n```"])
def test_no_program_is_an_error_with_feedback(problem_367, reply: str) -> None:
    judged = _judge(problem_367, reply)
    assert judged.error_category == NO_PROGRAM and not judged.success
    assert "No program" in judged.feedback


def test_engine_error_is_recorded_and_fed_back(problem_367) -> None:
    judged = _judge(problem_367, None, engine_error="ValueError: prompt too long")
    assert judged.error_category == ENGINE_ERROR and "prompt too long" in judged.feedback


def test_garbage_reply_never_raises(problem_367) -> None:
    garbage = "x : -> ->\n)))(((: ->\npoint : 1e999 0 -> A\ncircle : A -> c"
    judged = _judge(problem_367, garbage)
    assert judged.error_category is not None and not judged.success


def test_batch_keeps_rows_and_adds_columns() -> None:
    executor = DSLExecutor(str(DATA), "en", "conditions", with_image=False, max_rounds=3)
    batch = {
        "problem_id": np.array(["367", "367"], dtype=object),
        "round": np.array([1, 1]),
        "generated_text": np.array([RIGHT, None], dtype=object),
        "engine_error": np.array([None, float("nan")], dtype=object),
    }
    out = executor(batch)
    assert set(OUTPUT_COLUMNS) <= set(out)
    assert list(out["success"]) == [True, False]
    assert list(out["error_category"]) == [None, NO_PROGRAM]
    assert list(out["success_public"]) == [True, False]
    assert list(out["error_category_public"]) == [None, PUBLIC_KIND[NO_PROGRAM]]
    assert list(out["data_errors"]) == ["", ""]
    assert json.loads(out["verdict"][0])["id"] == "367"


def test_unknown_feedback_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="verbose"):
        DSLExecutor(str(DATA), "en", "verbose", with_image=False, max_rounds=3)


def test_an_error_blocks_public_success_even_when_the_scores_pass(problem_367) -> None:
    # The whole right figure is built before the bad last line (c drawn twice): both
    # of our scores pass.
    judged = _judge(problem_367, RIGHT + "\ncircle : O A -> c", mode="errors")
    assert judged.verdict.object_score == judged.verdict.condition_score == 1.0
    assert judged.error_category == "duplicate_label"
    assert not judged.success_public and not judged.success
    assert not judged.public.executed and judged.public.refusal is not None
    columns = judged.columns()
    assert columns["success_public"] is False
    assert columns["error_category_public"] == PUBLIC_KIND["duplicate_label"]
    assert _judge(problem_367, RIGHT).columns()["success_public"] is True


def test_rows_carry_the_problems_data_notes() -> None:
    problems = {p.id: p for p in load_problems(DATA)}
    broken = next(p for p in problems.values() if p.data_errors)
    noted = _judge(broken, "point : 0 0 -> A").columns()["data_errors"]
    assert noted == "; ".join(broken.data_errors) and noted
    assert _judge(problems["367"], RIGHT).columns()["data_errors"] == ""
