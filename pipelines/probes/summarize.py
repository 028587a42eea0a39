"""`python -m pipelines probe-summarize RESULTS`: the paper's Tables 4 and 5 from probe results.

Prints, per probed encoder, Table 4 (accuracy by training regime x config, full/dot test
images), Table 5 (cross-task transfers at or above `--min-accuracy`) and, with `--matrix`,
the whole transfer matrix. `probes.tables.summarize` returns the same tables as DataFrames.
"""

from __future__ import annotations

import argparse

import polars as pl

from pipelines.cli_args import existing_dir, percent
from probes.tables import summarize
from store.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `probe-summarize` command's flags."""
    parser.add_argument("results", type=existing_dir, help="results root given to `probe --out`")
    parser.add_argument("--min-accuracy", type=percent, default=70.0, help="Table 5 threshold (%%)")
    parser.add_argument("--matrix", action="store_true", help="also print the transfer matrix")


def run(args: argparse.Namespace) -> int:
    """Print the tables of every probed encoder under the results root; exit code 0."""
    try:
        tables = summarize(args.results, args.min_accuracy)
    except FileNotFoundError as err:
        raise UsageError(str(err)) from err
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=400,
        float_precision=1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
    ):
        for encoder, parts in tables.items():
            print(f"== {encoder}")
            print("Table 4: linear-probe accuracy (%), F/D = full/dot test images")
            print(parts["table4"])
            print(f"Table 5: cross-task transfer, accuracy >= {args.min_accuracy:g}%")
            print(parts["table5"] if not parts["table5"].is_empty() else "(none)")
            if args.matrix:
                print("Transfer matrix")
                print(parts["transfer"])
    return 0
