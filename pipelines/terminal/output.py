"""What commands print: rows or named tables, as text for people or as JSON or CSV (`--format`).

`print_rows` prints one list of rows (list-tasks, list-models). `print_tables` prints named
polars tables (the summarize commands): in `table` format every row and column in full,
each under a `## NAME` title (a table wider than FIT_CHARS folded into blocks of columns);
in `json` one object keyed by table name whose values are lists of row objects; in `csv`
one table as plain CSV on stdout, or, with `--csv-dir DIR`, each table to `DIR/NAME.csv`
(several tables in one CSV stream would load in no CSV reader). All three formats show the
same values, so a number read from the text table is the number a program gets.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from store.errors import UsageError

FORMATS = ("table", "json", "csv")
# A cell of `print_rows`'s text table longer than this is cut with an ellipsis; JSON and CSV
# keep every character. `print_tables` cuts nothing.
MAX_CELL = 60
# Decimals of a percentage everywhere one is shown; other floats keep PLAIN_DECIMALS.
PERCENT_DECIMALS = 1
PLAIN_DECIMALS = 3
# `print_tables` draws each table whole (no cell wrapped or cut), and a table wider than
# FIT_CHARS folded into blocks of columns that fit, each repeating the row's key columns:
# the demo's tables were 244 characters wide (issue 39), wrapped by every terminal.
FULL_WIDTH = 65_535  # the widest polars takes (u16)
FIT_CHARS = 100


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    """`--format table|json|csv` for a command that prints rows."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table for reading (long cells cut), json or csv for programs (default: table)",
    )


def add_table_arguments(
    parser: argparse.ArgumentParser, names: Sequence[str], headline: Sequence[str]
) -> None:
    """`--format`, `--all` and `--tables` for a command that prints the named tables
    `names`, of which `headline` are printed by default."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table: aligned text, every row and column; json: one object keyed by table name, "
        "each a list of row objects; csv: one table as CSV (several need --csv-dir) "
        "(default: table)",
    )
    parser.add_argument(
        "--csv-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="with --format csv: write each table to DIR/NAME.csv instead of stdout",
    )
    parser.add_argument("--all", action="store_true", help=f"print every table: {', '.join(names)}")
    parser.add_argument(
        "--tables",
        default=None,
        metavar="NAME,...",
        help=f"print these tables only (comma-separated; of {', '.join(names)}); "
        f"default: {', '.join(headline)}",
    )


def chosen_tables(
    args: argparse.Namespace, names: Sequence[str], headline: Sequence[str]
) -> list[str]:
    """The table names `--all` / `--tables` ask for, in `names` order; the headline when
    neither is given. An unknown name is a UsageError naming --tables."""
    if args.tables is None:
        default = list(names) if args.all else list(headline)
        check_csv_output(args, len(default))
        return default
    asked = [n.strip() for n in args.tables.split(",") if n.strip()]
    unknown = [n for n in asked if n not in names]
    if unknown or not asked:
        raise UsageError(
            f"--tables {args.tables!r}: choose from {', '.join(names)} (comma-separated)"
        )
    chosen = [n for n in names if n in asked]
    check_csv_output(args, len(chosen))
    return chosen


def check_csv_output(args: argparse.Namespace, tables: int) -> None:
    """UsageError when `--format csv` would print several tables to one stream, or
    `--csv-dir` names a file; before any work, so nothing is written."""
    folder = getattr(args, "csv_dir", None)  # `--format csv` with it: command_line.conflicts
    if folder is not None and folder.exists() and not folder.is_dir():
        raise UsageError(f"--csv-dir {folder} is a file; give a directory")
    if args.format == "csv" and folder is None and tables > 1:
        raise UsageError(
            f"--format csv prints one table and {tables} are chosen: pick one with "
            "--tables NAME, or write each to a file with --csv-dir DIR"
        )


def print_rows(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str, out: TextIO | None = None
) -> None:
    """`rows` (their `columns`, in that order) in the format `fmt`."""
    out = out or sys.stdout
    picked = [{c: row[c] for c in columns} for row in rows]
    if fmt == "json":
        json.dump(picked, out, indent=2, ensure_ascii=False)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows({c: _text(v) for c, v in row.items()} for row in picked)
    else:
        out.write(_table(picked, columns))


def print_tables(
    tables: Mapping[str, pl.DataFrame],
    fmt: str = "table",
    out: TextIO | None = None,
    titles: Mapping[str, str] | None = None,
    csv_dir: Path | None = None,
) -> None:
    """Named tables in the format `fmt`; in `table` format each under `## NAME: title`; in
    `csv` one table on `out`, or each to `csv_dir/NAME.csv` (its path printed)."""
    out = out or sys.stdout
    if fmt == "json":
        data = {name: [_json_row(r) for r in t.to_dicts()] for name, t in tables.items()}
        json.dump(data, out, indent=2, ensure_ascii=False, allow_nan=False)
        out.write("\n")
    elif fmt == "csv" and csv_dir is not None:
        csv_dir.mkdir(parents=True, exist_ok=True)
        for name, table in tables.items():
            path = csv_dir / f"{_file_name(name)}.csv"
            path.write_text(_flat(table).write_csv(line_terminator="\n"), encoding="utf-8")
            out.write(f"{path}\n")
    elif fmt == "csv":
        if len(tables) > 1:
            raise UsageError(
                f"--format csv prints one table and {len(tables)} are chosen: pick one with "
                "--tables NAME, or write each to a file with --csv-dir DIR"
            )
        for table in tables.values():
            out.write(_flat(table).write_csv(line_terminator="\n"))
    else:
        for name, table in tables.items():
            title = (titles or {}).get(name)
            out.write(f"\n## {name}" + (f": {title}" if title else "") + "\n")
            out.write(_text_table(table) + "\n")


def percent(table: pl.DataFrame, columns: Mapping[str, str]) -> pl.DataFrame:
    """`table` with each share column in `columns` (0..1) shown as a percentage with one
    decimal, renamed to its value in `columns` (a name that says `%`)."""
    present = {old: new for old, new in columns.items() if old in table.columns}
    return table.with_columns(
        (pl.col(old) * 100).round(PERCENT_DECIMALS).alias(old) for old in present
    ).rename(present)


def ranked(table: pl.DataFrame, orders: Mapping[str, Sequence[Any]]) -> pl.DataFrame:
    """`table` sorted by the given columns in turn, each by its listed order (values not
    listed after, in sorted order); columns without a listed order sort as they are."""
    keys = []
    for column, order in orders.items():
        if column not in table.columns:
            continue
        known = {value: i for i, value in enumerate(order)}
        extra = sorted(v for v in table[column].unique().to_list() if v not in known)
        rank = {**known, **{v: len(known) + i for i, v in enumerate(extra)}}
        keys.append(pl.col(column).replace_strict(rank, default=len(rank), return_dtype=pl.Int64))
    return table.sort(keys) if keys else table


def _text_table(table: pl.DataFrame) -> str:
    """The whole table as polars draws it (no row, column or cell is cut), folded into
    blocks of columns when it is wider than FIT_CHARS."""
    if table.is_empty():
        return "(none)"
    whole = _drawn(table)
    if _width(whole) <= FIT_CHARS:
        return whole
    keys = _key_columns(table)
    blocks: list[list[str]] = [[]]
    for column in (c for c in table.columns if c not in keys):
        trial = [*keys, *blocks[-1], column]
        if blocks[-1] and _width(_drawn(table.select(trial))) > FIT_CHARS:
            blocks.append([])
        blocks[-1].append(column)
    if len(blocks) == 1:
        return whole  # one column beside the keys is already too wide: folding cannot help
    return "\n".join(
        f"(columns, part {k} of {len(blocks)}: {', '.join(keys)} repeated)\n"
        + _drawn(table.select([*keys, *block]))
        for k, block in enumerate(blocks, start=1)
    )


def _key_columns(table: pl.DataFrame) -> list[str]:
    """The leading text columns that name a row (model, task, setup), at most half the
    width; at least the first column."""
    keys = [table.columns[0]]
    for column in table.columns[1:]:
        if table.schema[column] not in (pl.String, pl.Categorical):
            break
        if _width(_drawn(table.select([*keys, column]))) > FIT_CHARS // 2:
            break
        keys.append(column)
    return keys


def _width(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _drawn(table: pl.DataFrame) -> str:
    """The table as polars draws it, every row, column and character."""
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=FULL_WIDTH,
        fmt_str_lengths=1000,
        fmt_table_cell_list_len=-1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        float_precision=None,
    ):
        return str(_rounded(table))


def _rounded(table: pl.DataFrame) -> pl.DataFrame:
    """Floats to PLAIN_DECIMALS (percentages are already rounded to fewer)."""
    return table.with_columns(pl.col(pl.Float32, pl.Float64).round(PLAIN_DECIMALS))


def _flat(table: pl.DataFrame) -> pl.DataFrame:
    """`table` with list columns joined by commas, for CSV, which has no lists."""
    lists = [c for c, t in table.schema.items() if isinstance(t, pl.List)]
    return _rounded(table).with_columns(
        pl.col(c).cast(pl.List(pl.String)).list.join(",") for c in lists
    )


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row with NaN as null (JSON has no NaN) and floats rounded as the text table shows."""
    return {k: _json_value(v) for k, v in row.items()}


def _json_value(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, PLAIN_DECIMALS)
    return value


def _table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """Columns padded to their widest cell; the last column cut to the terminal's width."""
    cells = [[_cut(_text(row[c])) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    room = shutil.get_terminal_size((160, 24)).columns - sum(w + 2 for w in widths[:-1])
    widths[-1] = max(10, min(widths[-1], room))
    lines = [columns, ["-" * w for w in widths], *cells]
    return "".join(
        "  ".join(_cut(cell, w).ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in lines
    )


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else " ".join(str(value).split())


def _cut(text: str, width: int = MAX_CELL) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _file_name(table: str) -> str:
    """A table name as a file name: probe tables are named `kind:encoder`, and an encoder
    name may hold a slash (`hf:org/model`)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in table)


def table_text(tables: Mapping[str, pl.DataFrame], fmt: str) -> str:
    """What `print_tables` would print, as a string (for tests and files)."""
    buffer = io.StringIO()
    print_tables(tables, fmt, buffer)
    return buffer.getvalue()
