"""`summarize`: polars tables over a results directory.

Accuracy per task, category, setup and model with 95% bootstrap intervals; invalid-output
rate; MSE on numeric tasks (valid answers only); U-task pair consistency (both items of a
pair right).

Accuracy is the paper's: over every item. The paper awards no credit to an answer that
does not conform, so a row whose request failed (`engine_error`), a reasoning model's row
that ran out of budget (`out_of_budget`: the thinking budget or max_tokens ran out before the
model's own answer; `pipelines.engines.prompts.reasoning`) and an invalid answer all count as wrong,
in the accuracy and its bootstrap interval. Beside it: `answered_accuracy`, over the answered
rows only (neither an engine error nor out of budget), and `unanswered`, the count of rows
it leaves out. Invalid rate, MSE and pair consistency are over the answered rows;
`engine_error_rate` is over every row, and an `out of budget` count is added to the tables
whose rows come from a reasoning model.
"""

from __future__ import annotations

import argparse
import logging

import numpy as np
import polars as pl

from geometry.item import SETUPS
from pipelines.command_line.args import path_component, results_location
from pipelines.engines.prompts.reasoning import OUT_OF_BUDGET
from pipelines.noregeo.intervals import BOOTSTRAP_METHOD, bootstrap_ci
from pipelines.noregeo.results import RESULT_SCHEMA
from pipelines.noregeo.run_settings import recorded_expectations, recorded_model_name
from pipelines.terminal.output import (
    add_table_arguments,
    chosen_tables,
    percent,
    print_tables,
    ranked,
)
from store.errors import UsageError
from store.records import model_slug
from store.shards import ERROR_COLUMN, read_shards, shard_files
from store.storage import Location, children

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `summarize` command's options."""
    parser.add_argument(
        "results", type=results_location, help="results directory (or URI) given to evaluate --out"
    )
    # A folder name under RESULTS: no separators or `..`, so it cannot read outside it.
    parser.add_argument(
        "--benchmark", type=path_component, default="noregeo",
        help="results subfolder to read (noregeo; other names for custom benchmarks)",
    )  # fmt: skip
    add_table_arguments(parser, list(TITLES), HEADLINE)


def load_results(
    out: Location, model: str | None = None, benchmark: str = "noregeo"
) -> pl.DataFrame:
    """Every result row under `out/<benchmark>` (one model's when `model` is given), one
    per request key; unreadable shards, and shards whose columns are typed otherwise than
    RESULT_SCHEMA says, are quarantined with a warning (store.shards)."""
    root = out / benchmark
    if model is not None:
        root = root / f"model={model_slug(model)}"
    files = shard_files(root) if root.exists() else []
    if not files:
        raise UsageError(f"no result shards under {root}")
    rows = read_shards(root, schema=RESULT_SCHEMA)
    if rows is None:
        raise UsageError(f"no readable result shards under {root}: all were quarantined")
    return rows


def _failed() -> pl.Expr:
    return pl.col(ERROR_COLUMN).is_not_null()


def _over_budget() -> pl.Expr:
    return pl.col(OUT_OF_BUDGET).fill_null(False)


def _reasoned(df: pl.DataFrame) -> bool:
    """Whether any row says whether it ran out of budget (a reasoning model's rows)."""
    return OUT_OF_BUDGET in df.columns and df[OUT_OF_BUDGET].null_count() < df.height


def _with_errors(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with all-null error and out-of-budget columns where it has none (frames built
    without engines, rows of engines or models that have no budget)."""
    if ERROR_COLUMN not in df.columns:
        df = df.with_columns(pl.lit(None, pl.String).alias(ERROR_COLUMN))
    if OUT_OF_BUDGET not in df.columns:
        df = df.with_columns(pl.lit(None, pl.Boolean).alias(OUT_OF_BUDGET))
    return df


def _correct_or_wrong() -> pl.Expr:
    """`correct` of an answered row, False of an unanswered one."""
    return pl.when(_scored()).then(pl.col("correct").fill_null(False)).otherwise(False)


def _scored() -> pl.Expr:
    """Rows that count towards accuracy: answered, and not out of budget."""
    return ~_failed() & ~_over_budget()


def every_item(df: pl.DataFrame) -> pl.DataFrame:
    """All rows, those without an answer (an engine error, out of budget) scored wrong: the
    frame whose mean `correct` is the paper's accuracy."""
    return _with_errors(df).with_columns(_correct_or_wrong().alias("correct"))


def answered(df: pl.DataFrame) -> pl.DataFrame:
    """The rows whose request got an answer (no `engine_error`, not out of budget); all
    rows of frames that have neither column."""
    if ERROR_COLUMN in df.columns:
        df = df.filter(~_failed())
    return df.filter(~_over_budget()) if OUT_OF_BUDGET in df.columns else df


def accuracy_table(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per group: `n` rows in all, `unanswered` of them (an engine error or out of budget),
    `accuracy` over every row with its 95% CI (unanswered rows wrong: the paper's), the
    `engine_error_rate`, and over the answered rows only: `answered_accuracy`, invalid rate
    and MSE (numeric tasks, valid answers).

    A group whose rows all failed has accuracy 0 and answered accuracy, invalid rate and MSE
    null. Rows of a reasoning model that ran out of budget are also counted in
    `out_of_budget`."""
    reasoned = _reasoned(df)
    df = _with_errors(df)
    if "request_key" in df.columns:
        # One canonical row order: float sums (MSE) and the seeded bootstrap depend on it,
        # and a resumed run's shards hold the same rows as a fresh run's in another order.
        df = df.sort("request_key")
    ok = _scored()
    groups = df.group_by(by, maintain_order=True)
    table = groups.agg(
        pl.len().alias("n"),
        (~ok).sum().cast(pl.Int64).alias("unanswered"),
        _over_budget().sum().cast(pl.Int64).alias(OUT_OF_BUDGET),
        _correct_or_wrong().mean().alias("accuracy"),
        pl.col("correct").filter(ok).mean().alias("answered_accuracy"),
        (~pl.col("valid")).filter(ok).mean().alias("invalid_rate"),
        _failed().mean().alias("engine_error_rate"),
        pl.col("sq_error")
        .filter(ok & pl.col("valid") & pl.col("sq_error").is_not_null())
        .mean()
        .alias("mse"),
        _correct_or_wrong().alias("_correct"),
    )
    cis = [bootstrap_ci(np.array(c, dtype=bool)) for c in table["_correct"].to_list()]
    if not reasoned:
        table = table.drop(OUT_OF_BUDGET)
    return (
        table.drop("_correct")
        .with_columns(
            pl.Series("ci_low", [c[0] for c in cis]),
            pl.Series("ci_high", [c[1] for c in cis]),
        )
        .sort(by)
    )


def accuracy_by_task_setup(df: pl.DataFrame) -> pl.DataFrame:
    """Per model and task (rows: models sorted, tasks in the benchmark's order), one
    accuracy % column per setup (text, dotted, full), over every row (unanswered rows
    wrong: the paper's accuracy). One column per setup, not per model x setup, keeps the
    table narrow however many models there are."""
    cells = (
        _with_errors(df)
        .group_by(["model", "task", "setup"])
        .agg(_correct_or_wrong().mean().alias("accuracy"))
    )
    cells = percent(cells, {"accuracy": "accuracy"})
    setups = ranked(cells.select("setup").unique(), {"setup": SETUPS})["setup"].to_list()
    wide = cells.pivot(on="setup", index=["model", "task"], values="accuracy")
    # group_by's order varies run to run; a fixed order keeps the table the same each time.
    wide = ranked(wide, {"model": [], "task": task_order()})
    return wide.select("model", "task", *setups).rename({s: f"{s} %" for s in setups})


def pair_consistency(df: pl.DataFrame) -> pl.DataFrame:
    """Per U-task, setup and model: the share of pairs with both items right."""
    # A pair with a failed request is not a pair the model answered: the items == 2 check
    # below drops it.
    pairs = answered(df).filter(pl.col("pair_id").is_not_null())
    if pairs.is_empty():
        return pl.DataFrame()
    per_pair = (
        pairs.group_by(["model", "setup", "task", "pair_id"])
        .agg(pl.col("correct").all().alias("both_right"), pl.len().alias("items"))
        .filter(pl.col("items") == 2)
    )
    return (
        per_pair.group_by(["model", "setup", "task"])
        .agg(pl.len().alias("pairs"), pl.col("both_right").mean().alias("pair_consistency"))
        .sort(["model", "setup", "task"])
    )


def missing_rows(out: Location, df: pl.DataFrame, benchmark: str = "noregeo") -> pl.DataFrame:
    """Per model, task and setup the recorded runs expected rows for (run_settings): how
    many they expected, are `present` (one per request key) and are `missing` (a killed
    run, a lost or quarantined shard)."""
    present = df.group_by(["model", "task", "setup"]).agg(pl.len().alias("present"))
    found = []
    for folder in children(out / benchmark, "model=*"):
        name = recorded_model_name(folder)
        for cell, n in recorded_expectations(folder).items():
            task, setup = cell.rsplit("/", 1)
            found.append({"model": name, "task": task, "setup": setup, "expected": n})
    schema = {"model": pl.String, "task": pl.String, "setup": pl.String, "expected": pl.Int64}
    expected = pl.DataFrame(found, schema=schema)
    return (
        expected.join(present, on=["model", "task", "setup"], how="left")
        .with_columns(pl.col("present").fill_null(0).cast(pl.Int64))
        .with_columns((pl.col("expected") - pl.col("present")).clip(0).alias("missing"))
        .sort(["model", "task", "setup"])
    )


def missing_lines(missing: pl.DataFrame) -> list[str]:
    """One warning per model with missing rows, naming the task/setup cells."""
    lines = []
    for (model,), rows in missing.group_by(["model"], maintain_order=True):
        if rows["missing"].sum() == 0:
            continue
        cells = ", ".join(
            f"{r['task']}/{r['setup']} {r['missing']}"
            for r in rows.iter_rows(named=True)
            if r["missing"]
        )
        lines.append(
            f"model {model}: {rows['missing'].sum()} of {rows['expected'].sum()} "
            f"expected rows missing (task/setup: {cells}); rerun the same evaluate command "
            "to fill them in"
        )
    return lines


def _with_missing(table: pl.DataFrame, missing: pl.DataFrame | None, by: list[str]) -> pl.DataFrame:
    """`table` with a `missing` rows column beside `n` (0 where none are missing)."""
    if missing is None:
        return table
    counts = missing.group_by(by).agg(pl.col("missing").sum())
    return table.join(counts, on=by, how="left").with_columns(
        pl.col("missing").fill_null(0).cast(pl.Int64)
    )


# Share columns of the raw tables and the names they are shown under, as percentages.
PERCENT_COLUMNS = {
    "accuracy": "accuracy %",
    "answered_accuracy": "answered-only accuracy %",
    "ci_low": "ci95 low %",
    "ci_high": "ci95 high %",
    "invalid_rate": "invalid %",
    "engine_error_rate": "engine error %",
    "pair_consistency": "pair consistency %",
}
# Table names (the json keys, csv `# table:` names and --tables values) with their titles;
# HEADLINE is what `summarize` prints without --all or --tables.
TITLES = {
    "accuracy_by_task": "accuracy % per model and task (rows) and setup (columns)",
    "overall": f"per model x setup: accuracy % over every item (unanswered rows wrong, the "
    f"paper's) with its {BOOTSTRAP_METHOD}, accuracy % over the answered rows, unanswered "
    "rows, invalid-output % and engine-error %",
    "by_category": "per model x category x setup",
    "by_task": "per model x task x setup",
    "mse": "mean squared error on numeric tasks (valid answers only)",
    "pair_consistency": "U-task pairs with both items right",
}
HEADLINE = ("accuracy_by_task", "overall")
# Columns in the order they are printed: the group, its counts, then the rates.
COLUMN_ORDER = (
    "model",
    "category",
    "task",
    "setup",
    "n",
    "missing",
    "unanswered",
    "out_of_budget",
    "pairs",
    "accuracy %",
    "ci95 low %",
    "ci95 high %",
    "answered-only accuracy %",
    "invalid %",
    "engine error %",
    "pair consistency %",
    "mse",
)


def task_order() -> list[str]:
    """Task IDs in the benchmark's (DESIGN.md's) order."""
    from geometry.tasks.registry import all_tasks

    return list(all_tasks())


def _shown(table: pl.DataFrame) -> pl.DataFrame:
    """A raw table as printed: shares as percentages, models sorted, setups text, dotted,
    full, tasks in the benchmark's order, categories in the order their tasks come."""
    if table.is_empty():
        return table
    tasks = task_order()
    categories = list(dict.fromkeys(_category_of(t) for t in tasks))
    orders = {"model": [], "category": categories, "task": tasks, "setup": SETUPS}
    shown = ranked(percent(table, PERCENT_COLUMNS), orders)
    first = [c for c in COLUMN_ORDER if c in shown.columns]
    return shown.select(*first, *[c for c in shown.columns if c not in first])


def _category_of(task: str) -> str:
    from geometry.tasks.registry import all_tasks

    return all_tasks()[task].category


def summary_tables(
    df: pl.DataFrame, missing: pl.DataFrame | None = None
) -> dict[str, pl.DataFrame]:
    """The summary's tables by name (TITLES), as printed: percentages, fixed row order.
    With `missing` (from `missing_rows`), the per model x setup and per model x task x
    setup tables get a `missing` column, so n never shrinks silently."""
    numeric = df.filter(pl.col("answer_type") != "choice")
    by_setup, by_task = ["model", "setup"], ["model", "task", "setup"]
    mse = (
        accuracy_table(numeric, by_task).select(
            [*by_task, "n", "mse", "invalid_rate", "engine_error_rate"]
        )
        if not numeric.is_empty()
        else pl.DataFrame()
    )
    # MSE over tasks of different scales means nothing: only the per-task tables show it.
    raw = {
        "overall": _with_missing(accuracy_table(df, by_setup), missing, by_setup).drop("mse"),
        "by_category": accuracy_table(df, ["model", "category", "setup"]).drop("mse"),
        "by_task": _with_missing(accuracy_table(df, by_task), missing, by_task),
        "mse": mse,
        "pair_consistency": pair_consistency(df),
    }
    shown = {name: _shown(table) for name, table in raw.items()}
    return {"accuracy_by_task": accuracy_by_task_setup(df), **shown}


def accuracy_line(overall: pl.DataFrame) -> str:
    """One model's accuracy per setup in one line, from its `overall` table as printed (one
    row per setup): the figure a reader looks for first, where the tables around it are
    long (the demo's console keeps this line and leaves the tables to its step logs)."""
    parts = [
        f"{row['setup']} {row['accuracy %']:.1f} [{row['ci95 low %']:.1f}, "
        f"{row['ci95 high %']:.1f}] of {row['n']}"
        for row in overall.iter_rows(named=True)
    ]
    prefix = "accuracy % (unanswered rows wrong) [95% bootstrap interval] of items: "
    return prefix + "; ".join(parts)


def run(args: argparse.Namespace) -> int:
    """Print the chosen summary tables and warn of any missing rows; the exit code."""
    names = chosen_tables(args, list(TITLES), HEADLINE)
    df = load_results(args.results, benchmark=args.benchmark)
    missing = missing_rows(args.results, df, args.benchmark)
    for line in missing_lines(missing):
        log.warning(line)
    tables = summary_tables(df, missing)
    print_tables({n: tables[n] for n in names}, args.format, titles=TITLES, csv_dir=args.csv_dir)
    if args.format == "table" and len(names) < len(TITLES):
        print(f"\n(more: --all, or --tables with any of {', '.join(TITLES)})")
    return 0
