"""What a best mark must beat (issue 39: a model that answered the first option of every
choice item was bolded at 21.0%, below the random baseline's 22.2%, and its "best binary"
46.9% sat below 50% chance).

A model under test may be marked in a cell only where the 95% Wilson interval of its
accuracy lies wholly above both chance (a uniform guess among each item's options; 0 for
numeric answers) and the random baseline's accuracy on the same cell. A model that gives
one answer on most items of a task is named with its count ("answers yes on 38 of 40"); one
that picks the first option of most choice items, pooled over tasks, is named too (a few
items per task, as in the demo, are too few to flag any one task).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

# Computed by scipy (pipelines/noregeo/intervals.py), named there once for every page.
from pipelines.noregeo.intervals import wilson_interval

__all__ = ["wilson_interval"]  # re-exported: the report's modules read it from here
# A task where one answer covers at least this share of a model's valid answers (and at
# least MIN_ITEMS of them) is flagged: a fixed answer, not a reading of the figure.
ONE_VALUE_SHARE = 0.8
MIN_ITEMS = 5


def interval_text(correct: int, n: int) -> str:
    """The 95% Wilson interval of `correct` of `n` as a table prints it: "[low, high]" (%)."""
    return "[{:.1f}, {:.1f}]".format(*wilson_interval(correct, n))


def wilson_low(correct: int, n: int) -> float:
    """The lower end (%) of the 95% Wilson score interval of `correct` of `n`."""
    return wilson_interval(correct, n)[0] if n else 0.0


def chance_pct(rows: pl.DataFrame) -> float:
    """The accuracy (%) of a uniform guess among each row's options (0 without options)."""
    if rows.is_empty() or "options" not in rows.columns:
        return 0.0
    sizes = rows["options"].list.len().fill_null(0).to_list()
    return 100 * sum(1 / k for k in sizes if k) / len(sizes)


def above_chance(scored: pl.DataFrame, model: str, cell: pl.Expr, random_models: list[str]) -> bool:
    """Whether `model`'s answered rows in `cell` (a filter: a setup, a category) have a 95%
    interval above chance and above every random baseline's accuracy on that cell."""
    rows = scored.filter(cell & (pl.col("model") == model))
    if rows.is_empty():
        return False
    bar = chance_pct(rows)
    for random_model in random_models:
        theirs = scored.filter(cell & (pl.col("model") == random_model))
        if theirs.height:
            share = int(theirs["correct"].cast(pl.Int64).sum()) / theirs.height
            bar = max(bar, 100 * share)
    low = wilson_low(int(rows["correct"].cast(pl.Int64).sum()), rows.height)
    return low > bar


def random_baselines(df: pl.DataFrame) -> list[str]:
    """The models run by the `random` engine (chance, measured)."""
    if "engine" not in df.columns:
        return []
    return sorted(df.filter(pl.col("engine") == "random")["model"].unique().to_list())


def one_value_lines(scored: pl.DataFrame, models: list[str]) -> list[str]:
    """For each model of `models` and task where one valid answer covers ONE_VALUE_SHARE of
    the model's valid answers: "MODEL answers X on N of M items of TASK"."""
    lines: list[str] = []
    if "parsed" not in scored.columns or "valid" not in scored.columns:
        return lines
    valid = scored.filter(pl.col("valid") & pl.col("model").is_in(models))
    for (model, task), rows in sorted(valid.group_by("model", "task"), key=lambda g: g[0]):
        answers = Counter(str(a) for a in rows["parsed"].to_list())
        value, count = answers.most_common(1)[0]
        if rows.height >= MIN_ITEMS and count >= ONE_VALUE_SHARE * rows.height:
            lines.append(f"{model} answers {value} on {count} of {rows.height} items of {task}")
    return lines


def first_option_lines(scored: pl.DataFrame, models: list[str]) -> list[str]:
    """For each model of `models` whose valid answers to choice items pick the item's first
    option on ONE_VALUE_SHARE of them (at least MIN_ITEMS), where the gold is the first option
    less often than that: "MODEL answers the first option on N of M choice items (the right
    answer is the first on K)". Pooled over tasks, so 4 items per task still count."""
    needed = {"parsed", "valid", "options", "answer", "answer_type"}
    if not needed <= set(scored.columns):
        return []
    choice = scored.filter(
        pl.col("valid") & pl.col("model").is_in(models) & (pl.col("answer_type") == "choice")
    )
    first = pl.col("options").list.first().cast(pl.String)
    counts = (
        choice.group_by("model")
        .agg(
            pl.len().alias("n"),
            (_choice("parsed") == first).sum().alias("picked"),
            (_choice("answer") == first).sum().alias("gold"),
        )
        .sort("model")
    )
    return [
        f"{model} answers the first option on {picked} of {n} choice items (the right answer "
        f"is the first on {gold})"
        for model, n, picked, gold in counts.iter_rows()
        if n >= MIN_ITEMS and picked >= ONE_VALUE_SHARE * n and gold < ONE_VALUE_SHARE * n
    ]


def _choice(column: str) -> pl.Expr:
    """The option a row's `parsed` or `answer` names: rows store the JSON object the grammar
    asks for (`{"answer": "yes"}`); a bare value (rows built by hand) is taken as it is."""
    text = pl.col(column).cast(pl.String)
    return pl.coalesce(text.str.json_path_match("$.answer"), text)
