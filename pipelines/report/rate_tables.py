"""The report's rates with intervals: accuracy intervals by any grouping, and the shares of
invalid answers and engine errors per setup."""

from __future__ import annotations

import polars as pl

from geometry.item import SETUPS
from pipelines.engines.prompts.reasoning import OUT_OF_BUDGET
from pipelines.noregeo.summarize import accuracy_table, answered
from pipelines.report.tables import _percent, model_order
from store.shards import ERROR_COLUMN


def intervals(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Accuracy (%) over every row (unanswered rows wrong: the paper's) with its 95% bootstrap
    interval, beside it the accuracy (%) over the answered rows and the unanswered rows, the
    invalid-output rate (%) of the answered rows and the engine-error rate (%) of all rows;
    models in model_order (baselines last), then the other keys. Where reasoning models'
    rows are in `df`, the rows out of budget are counted in a column of their own."""
    rank = {m: i for i, m in enumerate(model_order(df))}
    setups = {s: i for i, s in enumerate(SETUPS)}
    # Setups in the README's order (text, dotted, full), not alphabetically.
    keys = [k if k != "setup" else "_s" for k in by if k != "model"]
    table = (
        accuracy_table(df, by)
        .with_columns(
            _m=pl.col("model").replace_strict(rank, return_dtype=pl.Int64),
            _s=pl.col("setup").replace_strict(setups, return_dtype=pl.Int64),
        )
        .sort("_m", *keys)
    )
    return table.select(
        *by,
        "n",
        "unanswered",
        *[c for c in (OUT_OF_BUDGET,) if c in table.columns],
        _percent(pl.col("accuracy")).alias("accuracy"),
        _percent(pl.col("ci_low")).alias("ci_low"),
        _percent(pl.col("ci_high")).alias("ci_high"),
        _percent(pl.col("answered_accuracy")).alias("answered_only_accuracy"),
        _percent(pl.col("invalid_rate")).alias("invalid_rate"),
        _percent(pl.col("engine_error_rate")).alias("engine_error_rate"),
    )


def invalid_rates(df: pl.DataFrame) -> pl.DataFrame:
    """Invalid-output rate (%) per model (rows) and setup (columns), over the answered rows
    (an engine error is not an output; see engine_error_rates)."""
    return _rate_by_setup(answered(df), ~pl.col("valid"))


def engine_error_rates(df: pl.DataFrame) -> pl.DataFrame:
    """Engine-error rate (%) per model and setup: requests that got no answer at all (a
    failed call, a crashed engine), over every row."""
    if ERROR_COLUMN not in df.columns:
        df = df.with_columns(pl.lit(None, pl.String).alias(ERROR_COLUMN))
    return _rate_by_setup(df, pl.col(ERROR_COLUMN).is_not_null())


def _rate_by_setup(df: pl.DataFrame, flag: pl.Expr) -> pl.DataFrame:
    if df.is_empty():
        return pl.DataFrame()
    cells = df.group_by("model", "setup").agg(_percent(flag.mean()).alias("rate"))
    wide = cells.pivot(on="setup", index="model", values="rate")
    rank = {m: i for i, m in enumerate(model_order(df))}
    present = [s for s in SETUPS if s in wide.columns]
    return (
        wide.select("model", *present)
        .with_columns(_m=pl.col("model").replace_strict(rank))
        .sort("_m")
        .drop("_m")
    )
