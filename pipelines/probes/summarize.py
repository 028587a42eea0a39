"""`python -m pipelines probe-summarize RESULTS`: the paper's Tables 4 and 5 from probe results.

Prints, per probed encoder, Table 4 (accuracy % by training regime x config, full/dot test
images), Table 5 (cross-task transfers at or above `--min-accuracy`) and, with `--matrix`
(or `--all`), the whole transfer matrix; `--format json|csv` for programs. Tables are named
`<kind>:<encoder>`. `probes.tables.summarize` returns the same tables as DataFrames.
"""

from __future__ import annotations

import argparse

import polars as pl

from pipelines.command_line.args import binary_accuracy_percent, existing_dir
from pipelines.terminal.output import PERCENT_DECIMALS, add_table_arguments, chosen_tables
from pipelines.terminal.output import print_tables as print_output
from probes.tables import summarize
from store.errors import UsageError

# Table kinds (printed once per encoder) with their titles; HEADLINE is printed by default.
TITLES = {
    "table4": "Table 4: linear-probe accuracy %, F/D = full/dot test images",
    "table5": "Table 5: cross-task transfer, configs reaching the threshold (accuracy %)",
    "transfer": "transfer matrix: every separate probe on every task (accuracy %)",
}
HEADLINE = ("table4", "table5")
# Table 4's row labels; every other column of it is an accuracy.
TABLE4_LABELS = ("Train DS", "Config")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `probe-summarize` command's flags."""
    parser.add_argument("results", type=existing_dir, help="results root given to `probe --out`")
    parser.add_argument(
        "--min-accuracy",
        type=binary_accuracy_percent,
        default=70.0,
        help="Table 5 threshold, in percent (the probe tasks are binary: 50 is chance)",
    )
    parser.add_argument(
        "--matrix", action="store_true", help="also print the transfer matrix (as --all does)"
    )
    add_table_arguments(parser, list(TITLES), HEADLINE)


def shown(kind: str, table: pl.DataFrame) -> pl.DataFrame:
    """A probe table as printed: accuracies to one decimal, column names saying %."""
    if kind == "table4":
        accuracies = [c for c in table.columns if c not in TABLE4_LABELS]
        return table.with_columns(pl.col(accuracies).round(PERCENT_DECIMALS)).rename(
            {c: f"{c} %" for c in accuracies}
        )
    if kind == "transfer":
        return table.with_columns(pl.col("Accuracy").round(PERCENT_DECIMALS)).rename(
            {"Accuracy": "Accuracy %"}
        )
    return table.rename({c: f"{c} %" for c in table.columns if c == "Configs with Accuracy"})


def run(args: argparse.Namespace) -> int:
    """Print the chosen tables of every probed encoder under the results root; exit code 0."""
    kinds = chosen_tables(args, list(TITLES), HEADLINE)
    if args.matrix and "transfer" not in kinds:
        kinds.append("transfer")
    try:
        tables = summarize(args.results, args.min_accuracy)
    except FileNotFoundError as err:
        raise UsageError(str(err)) from err
    named = {
        f"{kind}:{encoder}": shown(kind, parts[kind])
        for encoder, parts in tables.items()
        for kind in kinds
    }
    titles = {
        f"{kind}:{encoder}": TITLES[kind].replace("the threshold", f">= {args.min_accuracy:g}%")
        for encoder in tables
        for kind in kinds
    }
    print_output(named, args.format, titles=titles, csv_dir=args.csv_dir)
    return 0
