"""Issue 39: the report never crowns noise. A model under test that answers the first option
of every choice item ("yes") scores about chance: it gets no best mark in the key results,
Table 2 or the pooled headline's "best binary", and the key results name its fixed answer; a
model clearly above chance and the random baseline still gets its mark. Built from result rows
in memory: no Ray."""

from __future__ import annotations

import json

import polars as pl

from pipelines.noregeo.summarize import answered
from pipelines.report import tables as rt
from pipelines.report.chance import (
    first_option_lines,
    one_value_lines,
    wilson_interval,
    wilson_low,
)
from pipelines.report.html_page import INTERVAL_SUFFIX
from pipelines.report.key_results import key_marks, key_section, key_table
from pipelines.report.noregeo_sections import headline_section

ITEMS = 40


def _rows(model: str, engine: str, weights: str, answer_of: object) -> list[dict[str, object]]:
    rows = []
    for n in range(ITEMS):
        gold = "yes" if n % 2 else "no"
        parsed = answer_of(n, gold)  # type: ignore[operator]
        rows.append(
            {
                "model": model, "engine": engine, rt.WEIGHTS: weights, "setup": "text",
                "task": "C-BCT-CT", "category": "Basic coordinate tasks",
                "item_id": f"C-BCT-CT-{n:04d}", "options": ["yes", "no"], "answer": gold,
                "answer_type": "choice",
                "parsed": parsed, "valid": True, "correct": parsed == gold,
                "engine_error": None,
            }
        )  # fmt: skip
    return rows


def _results(good: bool) -> pl.DataFrame:
    rows = _rows("smollm2", "hf", "real", lambda n, gold: "yes")  # always the first option
    rows += _rows("random", "random", "none", lambda n, gold: "yes" if n % 3 else "no")
    if good:  # right on 36 of 40
        rows += _rows("strong", "hf", "real", lambda n, gold: gold if n % 10 else "maybe")
    return pl.DataFrame(rows)


def test_a_model_that_answers_one_value_is_not_marked_best_and_is_named() -> None:
    df = _results(good=False)
    assert key_marks(key_table(df), rt.model_tags(df), answered(df)) == {}
    scored = answered(df)
    assert rt.table2_marks(rt.table2(scored), ["random"], scored) == {}
    assert rt.best_answer_format(rt.answer_format_accuracy(scored), ["random"], scored).is_empty()
    headline = rt.paper_headline(rt.table2_cells(scored))
    assert set(headline["model"]) == {"smollm2", "random"}  # the figure is there, uncrowned
    assert rt.paper_headline_best(headline, ["random"], scored).is_empty()
    assert "No best model on the paper's figure" in headline_section(scored, ["random"]).intro
    intro = key_section(df, []).intro
    assert "No best marks" in intro
    assert "smollm2 answers yes on 40 of 40 items of C-BCT-CT" in intro
    assert "smollm2 answers the first option on 40 of 40 choice items" in intro


def test_first_option_picks_are_pooled_over_tasks_with_few_items() -> None:
    """The demo asks SmolLM2 4 items per task: too few to flag one task (MIN_ITEMS), yet its
    first-option answers over all choice items say what it does. The gold's own first-option
    count keeps a model that is right where the gold is first from being flagged."""
    rows = []
    for task, options in (("C-BCT-CT", ["yes", "no"]), ("N-SCP-TTT", ["a", "r", "o"])):
        for n in range(4):
            gold = options[n % len(options)]
            for model, parsed in (("first", options[0]), ("right", gold)):
                rows.append(
                    {
                        "model": model,
                        "task": task,
                        "item_id": f"{task}-{n:04d}",
                        "options": options,
                        "answer": json.dumps({"answer": gold}),
                        "answer_type": "choice",
                        "parsed": json.dumps({"answer": parsed}),
                        "valid": True,
                    }
                )  # answers stored as the rows store them: the grammar's JSON object
    df = pl.DataFrame(rows)
    assert one_value_lines(df, ["first", "right"]) == []  # 4 items a task: none flagged alone
    gold_first = sum(n % 2 == 0 for n in range(4)) + sum(n % 3 == 0 for n in range(4))  # 2 + 2
    assert first_option_lines(df, ["first", "right"]) == [
        f"first answers the first option on 8 of 8 choice items (the right answer is the "
        f"first on {gold_first})"
    ]


def test_a_model_above_chance_and_the_random_baseline_keeps_its_mark() -> None:
    df = _results(good=True)
    table = key_table(df)
    marks = key_marks(table, rt.model_tags(df), answered(df))
    marked = {table["model"][i]: mark for (i, _column), mark in marks.items()}
    assert marked == {"strong": "best"}  # smollm2's 50% is chance: no second mark
    scored = answered(df)
    table2 = rt.table2(scored)
    marks2 = rt.table2_marks(table2, ["random"], scored)
    assert {table2["model"][i] for i, _ in marks2} == {"strong"}
    best = rt.best_answer_format(rt.answer_format_accuracy(scored), ["random"], scored)
    assert best["best_binary_model"].to_list() == ["strong"]
    headline = rt.paper_headline(rt.table2_cells(scored))
    paper_best = rt.paper_headline_best(headline, ["random"], scored)
    assert paper_best["best_model"].to_list() == ["strong"]


def test_wilson_lower_bound() -> None:
    assert round(wilson_low(36, 40), 1) == 76.9
    assert wilson_low(0, 0) == 0.0


def test_the_key_table_gives_each_cell_its_interval() -> None:
    """Issue 39: key results set a 100-item row beside a 500-item one with nothing to say
    which is surer. 36 of 40 right: the 95% Wilson interval, worked by hand from its formula
    (z = 1.96: centre 0.948, half-width 0.1046, over 1.0960), is [76.9, 96.0]."""
    assert tuple(round(v, 1) for v in wilson_interval(36, 40)) == (76.9, 96.0)
    assert wilson_interval(0, 0) == (0.0, 100.0)
    df = _results(good=True)
    table = key_table(df)
    column = next(c for c in table.columns if c.endswith(INTERVAL_SUFFIX))
    for row in table.iter_rows(named=True):
        low, high = (float(v) for v in row[column].strip("[]").split(", "))
        percent = row[column.removesuffix(INTERVAL_SUFFIX)]
        assert low <= percent <= high
