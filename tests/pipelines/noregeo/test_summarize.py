"""Summary tables recomputed by hand on a small synthetic result frame."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.noregeo.summarize import (
    accuracy_by_task_setup,
    accuracy_table,
    bootstrap_ci,
    pair_consistency,
    summary_tables,
)


def _frame() -> pl.DataFrame:
    rows = []
    # U-task: 3 pairs; pair 0 both right, pair 1 one right, pair 2 both wrong.
    for pair, (a, b) in enumerate([(True, True), (True, False), (False, False)]):
        for correct in (a, b):
            rows.append(
                {
                    "model": "m",
                    "setup": "text",
                    "task": "U-PAP-PT",
                    "category": "Par",
                    "pair_id": f"p{pair}",
                    "correct": correct,
                    "valid": True,
                    "answer_type": "choice",
                    "sq_error": None,
                }
            )
    # Numeric task: errors 0, 1, 3 (squared 0, 1, 9), one invalid answer.
    for sq, valid, correct in (
        (0.0, True, True),
        (1.0, True, False),
        (9.0, True, False),
        (None, False, False),
    ):
        rows.append(
            {
                "model": "m",
                "setup": "text",
                "task": "N-ECL-SLT",
                "category": "Calc",
                "pair_id": None,
                "correct": correct,
                "valid": valid,
                "answer_type": "number",
                "sq_error": sq,
            }
        )
    return pl.DataFrame(rows)


def test_pair_consistency_counts_pairs_with_both_items_right() -> None:
    table = pair_consistency(_frame())
    assert table.height == 1
    assert table["pairs"][0] == 3
    assert table["pair_consistency"][0] == pytest.approx(1 / 3)


def test_accuracy_invalid_rate_and_mse_per_task() -> None:
    table = accuracy_table(_frame(), ["task"]).sort("task")
    numeric = table.filter(pl.col("task") == "N-ECL-SLT")
    assert numeric["accuracy"][0] == pytest.approx(1 / 4)
    assert numeric["invalid_rate"][0] == pytest.approx(1 / 4)
    assert numeric["mse"][0] == pytest.approx((0 + 1 + 9) / 3)  # valid answers only
    choice = table.filter(pl.col("task") == "U-PAP-PT")
    assert choice["accuracy"][0] == pytest.approx(3 / 6)
    assert choice["mse"][0] is None


def test_bootstrap_interval_brackets_the_mean_and_shrinks_with_n() -> None:
    rng = np.random.default_rng(1)
    small = rng.random(40) < 0.7
    large = rng.random(4000) < 0.7
    lo_s, hi_s = bootstrap_ci(small)
    lo_l, hi_l = bootstrap_ci(large)
    assert lo_s <= small.mean() <= hi_s
    assert lo_l <= large.mean() <= hi_l
    assert (hi_l - lo_l) < (hi_s - lo_s) / 5
    assert bootstrap_ci(np.ones(10, dtype=bool)) == (1.0, 1.0)


def test_summary_tables_cover_the_issue_list() -> None:
    tables = summary_tables(_frame())
    assert {"overall", "by_category", "by_task", "mse", "pair_consistency"} <= set(tables)


def test_an_engine_error_counts_as_wrong_in_the_reported_accuracy() -> None:
    answered = _frame().with_columns(pl.lit(None, pl.String).alias("engine_error"))
    # Two failed requests on the numeric task, stored as a broken engine might: no answer,
    # `correct` null. The paper gives no credit without a conforming answer: they are wrong.
    failed = pl.DataFrame(
        [
            {
                **answered.row(6, named=True),
                "correct": None,
                "valid": False,
                "sq_error": None,
                "engine_error": "transient: HTTP 503 after 6 attempts: busy",
            }
        ]
        * 2
    )
    df = pl.concat([answered, failed])
    table = accuracy_table(df, ["task"]).sort("task")
    numeric = table.filter(pl.col("task") == "N-ECL-SLT")
    # Recomputed here from the rows: 1 right of the 4 answered, of the 6 items in all.
    rows = df.filter(pl.col("task") == "N-ECL-SLT")
    right = int(rows["correct"].fill_null(False).sum())
    assert (right, rows.height) == (1, 6)
    assert numeric["n"][0] == 6 and numeric["unanswered"][0] == 2
    assert numeric["accuracy"][0] == pytest.approx(right / rows.height)
    assert numeric["answered_accuracy"][0] == pytest.approx(1 / 4)
    low, high = numeric["ci_low"][0], numeric["ci_high"][0]
    assert (low, high) == bootstrap_ci(np.array([True] + [False] * 5))
    assert numeric["engine_error_rate"][0] == pytest.approx(2 / 6)
    assert numeric["invalid_rate"][0] == pytest.approx(1 / 4)  # invalid is not error
    assert numeric["mse"][0] == pytest.approx((0 + 1 + 9) / 3)
    assert table.filter(pl.col("task") == "U-PAP-PT")["engine_error_rate"][0] == 0.0
    wide = accuracy_by_task_setup(df)
    assert wide.filter(pl.col("task") == "N-ECL-SLT")["text %"][0] == pytest.approx(
        100 / 6, abs=0.05
    )
    overall = summary_tables(df)["overall"]
    assert overall["accuracy %"][0] == pytest.approx(100 * 4 / 12, abs=0.05)  # 3 + 1 of 12
    assert overall["answered-only accuracy %"][0] == pytest.approx(100 * 4 / 10, abs=0.05)
    assert overall["unanswered"][0] == 2


def test_a_group_whose_requests_all_failed_has_no_answered_accuracy() -> None:
    row = {**_frame().row(0, named=True), "correct": False, "valid": False}
    df = pl.DataFrame([{**row, "engine_error": "final: HTTP 400 after 1 attempt: bad"}])
    table = accuracy_table(df, ["task"])
    assert table["engine_error_rate"][0] == 1.0 and table["unanswered"][0] == 1
    assert table["accuracy"][0] == 0.0  # over every item: the failed one is wrong
    assert table["answered_accuracy"][0] is None and table["invalid_rate"][0] is None
    assert pair_consistency(df).is_empty()


def test_the_pair_table_gives_each_models_count_not_the_largest() -> None:
    """Issue 39: a model that answered 1 pair beside one that answered 3 showed "pairs 3"."""
    from pipelines.report.gap_tables import pair_table

    full = _frame()
    one_pair = full.filter(pl.col("pair_id") == "p0").with_columns(model=pl.lit("short"))
    table = pair_table(pl.concat([full, one_pair]))
    assert table.select("pairs", "m", "short").row(0) == ("1-3", pytest.approx(33.3), 100.0)
    alone = pair_table(full)
    assert alone["pairs"].to_list() == ["3"]


def test_the_gap_figure_labels_a_random_weight_model_as_such() -> None:
    """Issue 39: the gap figure's legend called tiny-vlm, a random-weight model, a baseline."""
    from pipelines.report.figures import reference_label
    from pipelines.report.tables import WEIGHTS, model_tags

    df = pl.DataFrame(
        {
            "model": ["tiny-vlm", "random", "smollm2"],
            "engine": ["hf", "random", "hf"],
            WEIGHTS: ["random", "real", "real"],
        }
    )
    tags = model_tags(df)
    assert reference_label("tiny-vlm", tags) == "tiny-vlm (random weights)"
    assert reference_label("random", tags) == "random (baseline)"
    assert "smollm2" not in tags
