"""The report's gap tables: each model's accuracy gained or lost from one setup to another
(by task, by category, and summed up), and the consistency of paired (U-) items."""

from __future__ import annotations

import polars as pl

from geometry.item import SETUPS
from pipelines.noregeo.summarize import pair_consistency
from pipelines.report.tables import HUMAN, _percent, category_accuracy, model_order, task_by_model


def gap_by_task(df: pl.DataFrame) -> pl.DataFrame:
    """Accuracy(full) - accuracy(dotted) in points, tasks x models that ran both setups,
    with a last row `mean` (the average over tasks, as in the paper's Figure 6)."""
    full = task_by_model(df, "full", "accuracy")
    dotted = task_by_model(df, "dotted", "accuracy")
    if full.is_empty() or dotted.is_empty():
        return pl.DataFrame()
    models = [m for m in full.columns[1:] if m in dotted.columns[1:]]
    if not models:
        return pl.DataFrame()
    joined = full.join(dotted, on="task", suffix="_dotted")
    gap = joined.select(
        "task", *[(pl.col(m) - pl.col(f"{m}_dotted")).round(1).alias(m) for m in models]
    )
    mean = gap.select(pl.lit("mean").alias("task"), *[pl.col(m).mean().round(1) for m in models])
    return pl.concat([gap, mean])


def gap_by_category(df: pl.DataFrame) -> pl.DataFrame:
    """Per model and category: accuracy(full) - accuracy(dotted) in points (Figure 2)."""
    acc = category_accuracy(df.filter(pl.col("setup").is_in(["full", "dotted"])))
    wide = acc.pivot(on="setup", index=["model", "category", "code"], values="accuracy")
    if not {"full", "dotted"} <= set(wide.columns):
        return pl.DataFrame()
    return (
        wide.drop_nulls(["full", "dotted"])
        .with_columns((pl.col("full") - pl.col("dotted")).alias("gap"))
        .with_columns(pl.col("full", "dotted", "gap").round(1))
        .select("code", "category", "model", "dotted", "full", "gap")
        .sort("code", "model")
    )


def gap_by_task_long(gap: pl.DataFrame) -> pl.DataFrame:
    """gap_by_task's wide table (without its `mean` row) as rows: task, model, gap."""
    if gap.is_empty():
        return pl.DataFrame()
    tasks = gap.filter(pl.col("task") != "mean")
    return tasks.unpivot(index="task", variable_name="model", value_name="gap").drop_nulls("gap")


def gap_summary(
    per_category: pl.DataFrame, references: list[str], keys: tuple[str, ...] = ("code", "category")
) -> pl.DataFrame:
    """Distribution of the per-model gaps per `keys` (a category; or `("task",)`): models,
    mean, median, min, max; over the models under test only (`references`, the baselines,
    and `human` are left out)."""
    if per_category.is_empty():
        return pl.DataFrame()
    models = per_category.filter(~pl.col("model").is_in([HUMAN, *references]))
    if models.is_empty():
        return pl.DataFrame()
    return (
        models.group_by(*keys)
        .agg(
            pl.len().alias("models"),
            pl.col("gap").mean().round(1).alias("mean"),
            pl.col("gap").median().round(1).alias("median"),
            pl.col("gap").min().alias("min"),
            pl.col("gap").max().alias("max"),
        )
        .sort(keys[0])
    )


def pair_table(df: pl.DataFrame) -> pl.DataFrame:
    """U-task pair consistency (%): rows (setup, task, pairs), one column per model. `pairs`
    is the number of complete pairs each model answered, or their range ("4-10") where the
    models answered different numbers (a run with a smaller --per-task)."""
    pairs = pair_consistency(df)
    if pairs.is_empty():
        return pairs
    cells = pairs.with_columns(_percent(pl.col("pair_consistency")))
    wide = cells.pivot(on="model", index=["setup", "task"], values="pair_consistency")
    low, high = pl.col("pairs").min(), pl.col("pairs").max()
    counts = cells.group_by("setup", "task").agg(
        pl.when(low == high)
        .then(low.cast(pl.String))
        .otherwise(pl.format("{}-{}", low, high))
        .alias("pairs")
    )
    rank = {s: i for i, s in enumerate(SETUPS)}
    models = [m for m in model_order(pairs) if m in wide.columns]
    return (
        wide.join(counts, on=["setup", "task"])
        .select("setup", "task", "pairs", *models)
        .with_columns(_s=pl.col("setup").replace_strict(rank, return_dtype=pl.Int64))
        .sort("_s", "task")
        .drop("_s")
    )
