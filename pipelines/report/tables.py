"""NoReGeo report tables (polars) in the layout of the paper's Tables 2-3 and figures.

Accuracies are percentages rounded to 0.1. A task's category is the middle part of its ID
(`N-BCT-MT` -> `BCT`), as in the paper's Table 2 column heads. The model `human` appears
as a row wherever it has results, but never in the across-model statistics (Table 3).
Baselines (engines of kind `baseline`: oracle = upper bound, random = chance, constant) are
reference rows: listed after the models, marked on the page, and left out of every
across-model statistic too.
"""

from __future__ import annotations

import polars as pl

from geometry.item import SETUPS
from pipelines.engines.model_config import BASELINES
from pipelines.noregeo.summarize import accuracy_table, answered, pair_consistency
from store.shards import ERROR_COLUMN

HUMAN = "human"
KIND_PREFIX = {"classification": "C", "numeric": "N", "unstable": "U"}
SETUP_TITLES = {
    "text": "Text",
    "dotted": "Text with dotted images",
    "full": "Text with full images",
}


def with_codes(df: pl.DataFrame) -> pl.DataFrame:
    """Adds `code` (category code from the task ID) and `group` (`C-ACM`: kind + code)."""
    code = pl.col("task").str.split("-").list.get(1)
    return df.with_columns(code=code, group=pl.col("task").str.slice(0, 1) + "-" + code)


def reference_models(df: pl.DataFrame) -> list[str]:
    """The models run by a baseline engine (oracle, random, constant), in BASELINES order;
    the `engine` column decides, so a baseline run under another --model name counts too."""
    if "engine" not in df.columns:
        return []
    found = df.filter(pl.col("engine").is_in(list(BASELINES)))
    engines = dict(found.select("model", "engine").unique().iter_rows())
    return sorted(engines, key=lambda m: (BASELINES.index(engines[m]), m))


def model_order(df: pl.DataFrame) -> list[str]:
    """Models sorted by name, `human` after them (the paper's layout), then the baselines
    (reference rows)."""
    references = reference_models(df)
    models = sorted(m for m in df["model"].unique().to_list() if m not in references)
    ordered = [m for m in models if m != HUMAN] + ([HUMAN] if HUMAN in models else [])
    return ordered + references


def compared_models(df: pl.DataFrame) -> pl.DataFrame:
    """The rows of the models an across-model statistic counts: not `human`, no baseline."""
    return df.filter(~pl.col("model").is_in([HUMAN, *reference_models(df)]))


def setup_order(df: pl.DataFrame) -> list[str]:
    """The setups present in `df`, in SETUPS order."""
    present = set(df["setup"].unique().to_list())
    return [s for s in SETUPS if s in present]


def _percent(expr: pl.Expr) -> pl.Expr:
    return (expr * 100).round(1)


def table2(df: pl.DataFrame) -> pl.DataFrame:
    """Paper Table 2: rows (setup, model), columns kind-category (`C-ACM` ... `U-SYM`)."""
    coded = with_codes(df)
    groups = sorted(
        coded["group"].unique().to_list(), key=lambda g: ("CNU".index(g[0]), g.split("-")[1])
    )
    cells = coded.group_by("setup", "model", "group").agg(_percent(pl.col("correct").mean()))
    wide = cells.pivot(on="group", index=["setup", "model"], values="correct")
    rank = {s: i for i, s in enumerate(SETUPS)}
    models = model_order(df)
    return (
        wide.select("setup", "model", *[g for g in groups if g in wide.columns])
        .with_columns(
            _s=pl.col("setup").replace_strict(rank, return_dtype=pl.Int64),
            _m=pl.col("model").replace_strict({m: i for i, m in enumerate(models)}),
        )
        .sort("_s", "_m")
        .drop("_s", "_m")
    )


def category_accuracy(df: pl.DataFrame) -> pl.DataFrame:
    """Per model, setup and category: accuracy (%, unrounded) over the category's items."""
    coded = with_codes(df)
    return coded.group_by("model", "setup", "category", "code").agg(
        (pl.col("correct").mean() * 100).alias("accuracy")
    )


def table3_long(df: pl.DataFrame) -> pl.DataFrame:
    """Paper Table 3 as numbers: per category and setup, mean and sample std (ddof=1) across
    models of each model's category accuracy. `human` and the baselines are left out: they
    are not models under test (empty when no other model has results)."""
    models = compared_models(df)
    if models.is_empty():
        return pl.DataFrame()
    per_model = category_accuracy(models).with_columns(pl.col("accuracy") / 100)
    return (
        per_model.group_by("category", "code", "setup")
        .agg(
            pl.len().alias("models"),
            _percent(pl.col("accuracy").mean()).alias("mean"),
            _percent(pl.col("accuracy").std(ddof=1)).alias("std"),
        )
        .sort("code", "setup")
    )


def table3(long: pl.DataFrame) -> pl.DataFrame:
    """Paper Table 3 layout: one row per category, `mean ± std` per setup."""
    if long.is_empty():
        return pl.DataFrame()
    cells = long.with_columns(
        pl.format("{} ({})", pl.col("category"), pl.col("code")).alias("Task category"),
        # One model has no spread (ddof=1 gives null): say so rather than print "± 0.0".
        pl.when(pl.col("std").is_null())
        .then(pl.format("{} (1 model)", pl.col("mean")))
        .otherwise(pl.format("{} ± {}", pl.col("mean"), pl.col("std")))
        .alias("cell"),
    )
    wide = cells.pivot(on="setup", index="Task category", values="cell").sort("Task category")
    present = [s for s in SETUPS if s in wide.columns]
    return wide.select("Task category", *present).rename({s: SETUP_TITLES[s] for s in present})


def task_by_model(df: pl.DataFrame, setup: str, value: str) -> pl.DataFrame:
    """Tasks as rows, models as columns: accuracy (%) or MSE (`value` = accuracy / mse)."""
    part = df.filter(pl.col("setup") == setup)
    if value == "mse":
        part = part.filter(pl.col("answer_type") != "choice")
    if part.is_empty():
        return pl.DataFrame()
    if value == "accuracy":
        agg = _percent(pl.col("correct").mean()).alias("value")
    else:
        agg = (
            pl.col("sq_error")
            .filter(pl.col("valid") & pl.col("sq_error").is_not_null())
            .mean()
            .round(3)
            .alias("value")
        )
    cells = part.group_by("task", "model").agg(agg)
    wide = cells.pivot(on="model", index="task", values="value").sort("task")
    return wide.select("task", *[m for m in model_order(part) if m in wide.columns])


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


def gap_summary(per_category: pl.DataFrame, references: list[str]) -> pl.DataFrame:
    """Distribution of the per-model category gaps: models, mean, median, min, max; over the
    models under test only (`references`, the baselines, and `human` are left out)."""
    models = per_category.filter(~pl.col("model").is_in([HUMAN, *references]))
    if models.is_empty():
        return pl.DataFrame()
    return (
        models.group_by("code", "category")
        .agg(
            pl.len().alias("models"),
            pl.col("gap").mean().round(1).alias("mean"),
            pl.col("gap").median().round(1).alias("median"),
            pl.col("gap").min().alias("min"),
            pl.col("gap").max().alias("max"),
        )
        .sort("code")
    )


def pair_table(df: pl.DataFrame) -> pl.DataFrame:
    """U-task pair consistency (%): rows (setup, task, pairs), one column per model."""
    pairs = pair_consistency(df)
    if pairs.is_empty():
        return pairs
    cells = pairs.with_columns(_percent(pl.col("pair_consistency")))
    wide = cells.pivot(on="model", index=["setup", "task"], values="pair_consistency")
    counts = cells.group_by("setup", "task").agg(pl.col("pairs").max())
    rank = {s: i for i, s in enumerate(SETUPS)}
    models = [m for m in model_order(pairs) if m in wide.columns]
    return (
        wide.join(counts, on=["setup", "task"])
        .select("setup", "task", "pairs", *models)
        .with_columns(_s=pl.col("setup").replace_strict(rank, return_dtype=pl.Int64))
        .sort("_s", "task")
        .drop("_s")
    )


def intervals(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Accuracy (%) over the answered rows with its 95% bootstrap interval, the invalid-output
    rate (%) of the answered rows and the engine-error rate (%) of all rows; models in
    model_order (baselines last), then the other keys."""
    rank = {m: i for i, m in enumerate(model_order(df))}
    table = (
        accuracy_table(df, by)
        .with_columns(_m=pl.col("model").replace_strict(rank, return_dtype=pl.Int64))
        .sort("_m", *[k for k in by if k != "model"])
    )
    return table.select(
        *by,
        "n",
        _percent(pl.col("accuracy")).alias("accuracy"),
        _percent(pl.col("ci_low")).alias("ci_low"),
        _percent(pl.col("ci_high")).alias("ci_high"),
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
