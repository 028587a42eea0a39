"""Rows printed as an aligned table for people, or as JSON or CSV for programs (`--format`)."""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any, TextIO

FORMATS = ("table", "json", "csv")
# A table cell longer than this is cut with an ellipsis; JSON and CSV keep every character.
MAX_CELL = 60


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    """`--format table|json|csv`."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table for reading (long cells cut), json or csv for programs (default: table)",
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
