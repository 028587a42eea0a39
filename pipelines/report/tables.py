"""NoReGeo report tables (polars) in the layout of the paper's Tables 2-3 and figures.

Accuracies are percentages rounded to 0.1. A task's category is the middle part of its ID
(`N-BCT-MT` -> `BCT`), as in the paper's Table 2 column heads. The model `human` appears
as a row wherever it has results, but never in the across-model statistics (Table 3).
Random-weight models (config `weights: random`, the `weights` column the report adds from
the run records: their answers are noise) and baselines (engines of kind `baseline`: oracle =
upper bound, random = chance, constant) are reference rows: listed after the models under
test, tagged on the page, never marked best, and left out of every across-model statistic.
"""

from __future__ import annotations

import polars as pl

from geometry.item import SETUPS
from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.report.chance import above_chance, interval_text, random_baselines
from pipelines.report.html_page import INTERVAL_SUFFIX

HUMAN = "human"
# The column (from the run records' model configs) that says whose weights are random.
WEIGHTS = "weights"
RANDOM_WEIGHTS = "random weights"
BASELINE = "baseline"
# GeoBuild's rows that are no model: the numerical solver's programs and scripted replies.
SOLVER_TAG = "solver"
REPLAY_TAG = "program replay"
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


def model_tags(df: pl.DataFrame) -> dict[str, str]:
    """Model -> its tag, for the models that are not models under test: `random weights`
    (the WEIGHTS column says random) and `baseline` (run by a baseline engine: the `engine`
    column decides, so a baseline run under another --model name counts too)."""
    tags: dict[str, str] = {}
    if WEIGHTS in df.columns:
        random = df.filter(pl.col(WEIGHTS) == "random")["model"].unique().to_list()
        tags.update({m: RANDOM_WEIGHTS for m in random})
    if "engine" in df.columns:
        baselines = df.filter(pl.col("engine").is_in(list(BASELINES)))["model"].unique()
        tags.update({m: BASELINE for m in baselines.to_list()})
    return tags


def reference_models(df: pl.DataFrame) -> list[str]:
    """The models that are not models under test (model_tags): random-weight models by name,
    then the baselines in BASELINES order (oracle, random, constant)."""
    tags = model_tags(df)
    if not tags:
        return []
    engines = dict(
        df.filter(pl.col("model").is_in(list(tags))).select("model", "engine").unique().iter_rows()
    )

    def rank(model: str) -> tuple[int, str]:
        if tags[model] == RANDOM_WEIGHTS:
            return (0, model)
        return (1 + BASELINES.index(engines[model]), model)

    return sorted(tags, key=rank)


def model_order(df: pl.DataFrame) -> list[str]:
    """Models under test, those with real weights first (by name), `human` after them (the
    paper's layout), then the reference rows (reference_models)."""
    references = reference_models(df)
    models = sorted(m for m in df["model"].unique().to_list() if m not in references)
    real = set()
    if WEIGHTS in df.columns:
        real = set(df.filter(pl.col(WEIGHTS) == "real")["model"].unique().to_list())
    models.sort(key=lambda m: m not in real)  # stable: by name within each group
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


def _group_order(groups: list[str]) -> list[str]:
    """Kind-category heads in the paper's order: C, N, U, each by category code."""
    return sorted(groups, key=lambda g: ("CNU".index(g[0]), g.split("-")[1]))


def table2_cells(df: pl.DataFrame) -> pl.DataFrame:
    """Table 2 as long cells: setup, model, group (`C-ACM`), accuracy (%, unrounded)."""
    coded = with_codes(df)
    return coded.group_by("setup", "model", "group").agg(
        (pl.col("correct").mean() * 100).alias("accuracy")
    )


# triangle_type (N-SCP-TTT) is a three-way choice (acute / right / obtuse: a third right by
# chance) that the paper files under the numeric N-SCP column; Table 2 shows N-SCP with it,
# as the paper, and beside it this column without it.
TRIANGLE_TYPE = "N-SCP-TTT"
NSCP_WITHOUT_TTT = "N-SCP w/o TTT"


def table2(df: pl.DataFrame) -> pl.DataFrame:
    """Paper Table 2: rows (setup, model), columns kind-category (`C-ACM` ... `U-SYM`), and
    N-SCP without triangle_type beside N-SCP (TRIANGLE_TYPE)."""
    cells = table2_cells(df).with_columns(pl.col("accuracy").round(1))
    without = with_codes(df.filter(pl.col("task") != TRIANGLE_TYPE)).filter(
        pl.col("group") == "N-SCP"
    )
    if not without.is_empty() and TRIANGLE_TYPE in set(df["task"].to_list()):
        extra = without.group_by("setup", "model").agg(
            (pl.col("correct").mean() * 100).round(1).alias("accuracy"),
            group=pl.lit(NSCP_WITHOUT_TTT),
        )
        cells = pl.concat([cells, extra.select(cells.columns)])
    wide = cells.pivot(on="group", index=["setup", "model"], values="accuracy")
    rank = {s: i for i, s in enumerate(SETUPS)}
    models = model_order(df)
    groups = _group_order([g for g in cells["group"].unique().to_list() if g != NSCP_WITHOUT_TTT])
    if NSCP_WITHOUT_TTT in wide.columns:
        groups.insert(groups.index("N-SCP") + 1, NSCP_WITHOUT_TTT)
    return (
        wide.select("setup", "model", *[g for g in groups if g in wide.columns])
        .with_columns(
            _s=pl.col("setup").replace_strict(rank, return_dtype=pl.Int64),
            _m=pl.col("model").replace_strict({m: i for i, m in enumerate(models)}),
        )
        .sort("_s", "_m")
        .drop("_s", "_m")
    )


def table2_with_intervals(table: pl.DataFrame, df: pl.DataFrame) -> pl.DataFrame:
    """`table` (table2 of `df`) with each accuracy column followed by `<column>, 95%
    interval`: the cell's 95% Wilson interval over its items, "[low, high]" (%). Rows stay
    in `table`'s order, so table2_marks' (row, column) keys hold for it."""
    groups = table.columns[2:]
    coded = with_codes(df)
    parts = [coded]
    if NSCP_WITHOUT_TTT in groups:
        without = coded.filter((pl.col("group") == "N-SCP") & (pl.col("task") != TRIANGLE_TYPE))
        parts.append(without.with_columns(group=pl.lit(NSCP_WITHOUT_TTT)))
    counts = (
        pl.concat([p.select("setup", "model", "group", "correct") for p in parts])
        .drop_nulls("correct")  # the same rows table2's mean counts
        .group_by("setup", "model", "group")
        .agg(pl.col("correct").sum().alias("right"), pl.len().alias("n"))
    )
    spans = counts.with_columns(
        pl.struct("right", "n")
        .map_elements(lambda c: interval_text(c["right"], c["n"]), return_dtype=pl.String)
        .alias("span")
    ).pivot(on="group", index=["setup", "model"], values="span")
    spans = spans.rename({g: g + INTERVAL_SUFFIX for g in groups if g in spans.columns})
    joined = table.join(spans, on=["setup", "model"], how="left", maintain_order="left")
    ordered = [c for g in groups for c in (g, g + INTERVAL_SUFFIX) if c in joined.columns]
    return joined.select("setup", "model", *ordered)


def table2_marks(
    table: pl.DataFrame, references: list[str], scored: pl.DataFrame | None = None
) -> dict[tuple[int, str], str]:
    """Best and second-best cell of each Table 2 column within each setup: {(row, column):
    "best" | "second"}. Only the models under test compete (`human` and `references`, the
    baselines, do not), and with `scored` (the answered rows) only where their 95% interval
    lies above chance and the random baseline (pipelines.report.chance); ties share a mark,
    and "second" is the next lower distinct value."""
    marks: dict[tuple[int, str], str] = {}
    if table.is_empty():
        return marks
    outside = {HUMAN, *references}
    rows = list(enumerate(table.iter_rows(named=True)))
    grouped = with_codes(scored) if scored is not None else None
    randoms = random_baselines(scored) if scored is not None else []
    for setup in table["setup"].unique().to_list():
        block = [(i, r) for i, r in rows if r["setup"] == setup and r["model"] not in outside]
        for column in table.columns[2:]:
            if grouped is not None:
                cell = (pl.col("setup") == setup) & (pl.col("group") == column)
                block = [
                    (i, r)
                    for i, r in rows
                    if r["setup"] == setup
                    and r["model"] not in outside
                    and above_chance(grouped, r["model"], cell, randoms)
                ]
            values = sorted({r[column] for _, r in block if r[column] is not None}, reverse=True)
            for i, r in block:
                if values and r[column] == values[0]:
                    marks[(i, column)] = "best"
                elif len(values) > 1 and r[column] == values[1]:
                    marks[(i, column)] = "second"
    return marks


def table2_best_overall(table: pl.DataFrame, references: list[str]) -> dict[tuple[int, str], str]:
    """The best cell of each Table 2 column across all setups (the paper underlines it):
    {(row, column): "overall"}; the same competitors and ties as table2_marks."""
    marks: dict[tuple[int, str], str] = {}
    outside = {HUMAN, *references}
    rows = [(i, r) for i, r in enumerate(table.iter_rows(named=True)) if r["model"] not in outside]
    for column in table.columns[2:]:
        values = [r[column] for _, r in rows if r[column] is not None]
        for i, r in rows:
            if values and r[column] == max(values):
                marks[(i, column)] = "overall"
    return marks


def merged_marks(*marks: dict[tuple[int, str], str]) -> dict[tuple[int, str], str]:
    """Several mark maps as one: a cell's marks joined by spaces (its CSS classes)."""
    merged: dict[tuple[int, str], str] = {}
    for mapping in marks:
        for cell, mark in mapping.items():
            merged[cell] = f"{merged[cell]} {mark}" if cell in merged else mark
    return merged


def category_names(df: pl.DataFrame) -> dict[str, str]:
    """Category code -> the category's name, as the rows spell it (`BCT` -> `Basic ...`)."""
    return dict(with_codes(df).select("code", "category").unique("code").iter_rows())


# The method the report's Table 3 uses: the one that reproduces the paper's printed Table 3
# best from its printed Table 2 rows (pipelines/report/table3_evidence.py; the residual
# table is in docs/report.md, and a test checks that this stays the evidence's winner).
TABLE3_METHOD = "model x task"


def category_accuracy(df: pl.DataFrame) -> pl.DataFrame:
    """Per model, setup and category: accuracy (%, unrounded) over the category's items."""
    coded = with_codes(df)
    return coded.group_by("model", "setup", "category", "code").agg(
        (pl.col("correct").mean() * 100).alias("accuracy")
    )


def task_accuracy(df: pl.DataFrame) -> pl.DataFrame:
    """Per model, setup and task: accuracy (%, unrounded), with the category code."""
    return (
        with_codes(df)
        .group_by("model", "setup", "task", "code", "category")
        .agg((pl.col("correct").mean() * 100).alias("accuracy"))
    )


def table3_over_tasks(df: pl.DataFrame) -> pl.DataFrame:
    """Paper Table 3 as numbers, by TABLE3_METHOD: per category and setup, the mean and
    sample std (ddof=1) over the (model, task) accuracies of the models under test, the
    values of the paper's per-task heatmaps (Figures 3a-5a) grouped by category; `human`
    and the baselines are not models (empty when no other model has results). Columns:
    category, code, setup, values, models, tasks, mean, std."""
    models = compared_models(df)
    if models.is_empty():
        return pl.DataFrame()
    return (
        task_accuracy(models)
        .group_by("code", "setup")
        .agg(
            pl.col("category").first(),
            pl.len().alias("values"),
            pl.col("model").n_unique().alias("models"),
            pl.col("task").n_unique().alias("tasks"),
            pl.col("accuracy").mean().round(1).alias("mean"),
            pl.col("accuracy").std(ddof=1).round(1).alias("std"),
        )
        .select("category", "code", "setup", "values", "models", "tasks", "mean", "std")
        .sort("code", "setup")
    )


# Table 3's setup columns: the head says what the ± is (the spread across models and tasks,
# not an uncertainty; issue 39: "50.0 ± 0.0" from 8 items read as certain), so the CSV and
# Markdown copies, which have no caption, say it too.
TABLE3_SPREAD = ": mean ± sd over model × task"


def table3(long: pl.DataFrame) -> pl.DataFrame:
    """Paper Table 3 layout: one row per category, `mean ± std` per setup (from
    table3_over_tasks), each setup's head ending in TABLE3_SPREAD."""
    if long.is_empty():
        return pl.DataFrame()
    cells = long.with_columns(
        pl.format("{} ({})", pl.col("category"), pl.col("code")).alias("Task category"),
        # One value has no spread (ddof=1 gives null): "± –", the same shape as every cell.
        pl.format(
            "{} ± {}",
            pl.col("mean").map_elements(lambda v: f"{v:.1f}", return_dtype=pl.String),
            pl.col("std").map_elements(lambda v: f"{v:.1f}", return_dtype=pl.String).fill_null("–"),
        ).alias("cell"),
    )
    wide = cells.pivot(on="setup", index="Task category", values="cell").sort("Task category")
    present = [s for s in SETUPS if s in wide.columns]
    heads: dict[str, str] = {s: SETUP_TITLES[s] + TABLE3_SPREAD for s in present}
    return wide.select("Task category", *present).rename(heads)


def paper_headline(cells: pl.DataFrame) -> pl.DataFrame:
    """The paper's headline figure, by its definition: per setup and model, the mean of
    the model's Classification cells of Table 2 (C-ACM, C-BCT, C-SYM: the paper's
    "multiple-choice tasks"), with the number of cells it averages. The paper's human
    74.5% is the mean of its dotted human cells 81.5, 70.0 and 72.0, Phi-3.5-Vision's
    "about 55%" the mean of its dotted cells 41.5, 73.0 and 52.0 (55.5); `cells` is
    table2_cells' shape (setup, model, group, accuracy %)."""
    classification = cells.filter(pl.col("group").str.starts_with(KIND_PREFIX["classification"]))
    if classification.is_empty():
        return pl.DataFrame()
    rank = {s: i for i, s in enumerate(SETUPS)}
    return (
        classification.group_by("setup", "model")
        .agg(pl.col("accuracy").mean().round(1).alias("classification"), pl.len().alias("cells"))
        .with_columns(_s=pl.col("setup").replace_strict(rank, return_dtype=pl.Int64))
        .sort("_s", "model")
        .drop("_s")
    )


def paper_headline_best(
    headline: pl.DataFrame, references: list[str], scored: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per setup: the best model under test by paper_headline (the paper's "strongest
    open-source VLM ... about 55%"), among the models under test with the most
    Classification cells in that setup, and `human`'s figure where it ran (the paper's
    74.5%); empty when no model under test has a figure. With `scored` (the answered rows),
    only a model whose 95% interval on the setup's Classification items lies above chance
    and the random baseline can be best, as in best_answer_format (the demo's SmolLM2, always
    the first option, was named best at 37.5%, below the random baseline's 39.2%); a setup
    where none does keeps human's figure with no best model."""
    models = headline.filter(~pl.col("model").is_in([HUMAN, *references]))
    randoms = random_baselines(scored) if scored is not None else []
    classification = pl.col("task").str.starts_with(KIND_PREFIX["classification"] + "-")
    rows = []
    for setup in [s for s in SETUPS if s in set(models["setup"])]:
        part = models.filter(pl.col("setup") == setup)
        complete = part.filter(pl.col("cells") == part["cells"].max())
        ranked = complete.sort("classification", "model", descending=[True, False])
        if scored is not None:
            cell = (pl.col("setup") == setup) & classification
            ranked = _above_chance_only(ranked, scored, cell, randoms)
        human = headline.filter(pl.col("setup") == setup, pl.col("model") == HUMAN)
        if ranked.is_empty() and not human.height:
            continue
        top = ranked.row(0, named=True) if ranked.height else {}
        rows.append(
            {
                "setup": setup,
                "best_model": top.get("model"),
                "best_classification": top.get("classification"),
                "cells": top.get("cells"),
                "human_classification": human["classification"][0] if human.height else None,
            }
        )
    return pl.DataFrame(rows)


def _above_chance_only(
    models: pl.DataFrame, scored: pl.DataFrame, cell: pl.Expr, randoms: list[str]
) -> pl.DataFrame:
    """The rows of `models` whose model's 95% interval on `cell` lies above chance and the
    random baselines (pipelines.report.chance.above_chance), in their order."""
    fair = [m for m in models["model"] if above_chance(scored, m, cell, randoms)]
    return models.filter(pl.col("model").is_in(fair))


def answer_format_accuracy(df: pl.DataFrame) -> pl.DataFrame:
    """Our own pooled headline (not the paper's definition, which is paper_headline): per
    setup and model, accuracy (%) over the binary
    items (choice items with two options: yes/no) and over all multiple-choice items
    (every choice item, binary ones included), each over items (not a mean of tasks), with
    its item count. Rows in Table 2's order: models, `human`, baselines."""
    choice = df.filter(pl.col("answer_type") == "choice")
    if choice.is_empty():
        return pl.DataFrame()
    binary = pl.col("options").list.len() == 2
    cells = choice.group_by("setup", "model").agg(
        _percent(pl.col("correct").filter(binary).mean()).alias("binary"),
        binary.sum().cast(pl.Int64).alias("binary_n"),
        _percent(pl.col("correct").mean()).alias("multiple_choice"),
        pl.len().cast(pl.Int64).alias("multiple_choice_n"),
    )
    rank = {s: i for i, s in enumerate(SETUPS)}
    models = {m: i for i, m in enumerate(model_order(df))}
    return (
        cells.with_columns(
            _s=pl.col("setup").replace_strict(rank, return_dtype=pl.Int64),
            _m=pl.col("model").replace_strict(models, return_dtype=pl.Int64),
        )
        .sort("_s", "_m")
        .drop("_s", "_m")
    )


# The items each pooled headline figure is over (answer_format_accuracy).
FORMAT_ITEMS = {
    "binary": (pl.col("answer_type") == "choice") & (pl.col("options").list.len() == 2),
    "multiple_choice": pl.col("answer_type") == "choice",
}


def best_answer_format(
    table: pl.DataFrame, references: list[str], scored: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per setup, on our pooled figures (answer_format_accuracy): the best model under test
    on binary and on multiple-choice items, and `human`'s multiple-choice accuracy when it
    ran. With `scored` (the answered rows), only a model whose 95% interval on those items
    lies above chance and the random baseline can be best (pipelines.report.chance: a
    "best binary" of 46.9% once sat below 50% chance)."""
    models = table.filter(~pl.col("model").is_in([HUMAN, *references]))
    if models.is_empty():
        return pl.DataFrame()
    randoms = random_baselines(scored) if scored is not None else []
    rows = []
    for setup in [s for s in SETUPS if s in set(table["setup"])]:
        part = models.filter(pl.col("setup") == setup)
        human = table.filter((pl.col("setup") == setup) & (pl.col("model") == HUMAN))
        row: dict[str, object] = {"setup": setup}
        for column in ("binary", "multiple_choice"):
            top = part.drop_nulls(column).sort(column, "model", descending=[True, False])
            if scored is not None:
                cell = (pl.col("setup") == setup) & FORMAT_ITEMS[column]
                top = _above_chance_only(top, scored, cell, randoms)
            row[f"best_{column}"] = top[column][0] if top.height else None
            row[f"best_{column}_model"] = top["model"][0] if top.height else None
        row["human_multiple_choice"] = human["multiple_choice"][0] if human.height else None
        if row["best_binary_model"] or row["best_multiple_choice_model"]:
            rows.append(row)  # a setup no model under test ran has no best model
    return pl.DataFrame(rows)


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
