"""Escaping of user-derived text (model names, ids, reasons) for the report's copies.

Model names come from config files and result rows, so they can hold anything: `<script>`,
`|`, `$...$` (maths to matplotlib), or a leading `=` (a formula to a spreadsheet). HTML
uses `html.escape`; figures turn maths parsing off (report_figures); this module covers
the Markdown and CSV copies of the tables.
"""

from __future__ import annotations

import csv
import io

import polars as pl

# Backslash-escaped in Markdown: the punctuation GFM gives a meaning inside a table cell.
_MARKDOWN_PUNCTUATION = "\\`*_[]|#~!"
# Written as entities in both copies, so neither holds live markup.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# A spreadsheet reads a cell starting with one of these as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def markdown_text(text: str) -> str:
    """`text` as literal GitHub-flavoured Markdown inside a table cell, on one line."""
    out = []
    for char in " ".join(text.splitlines()):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _MARKDOWN_PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def csv_text(text: str) -> str:
    """A CSV text cell that no spreadsheet runs and no browser renders as markup.

    `<` and `>` become entities (`&` is kept: nothing is markup without `<`); a cell that
    would start a formula gets a leading `'`, the spreadsheet convention for literal text.
    """
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_table(frame: pl.DataFrame) -> str:
    """The frame as CSV: text columns and every header escaped with `csv_text`; numbers
    keep polars' own formatting (a negative gap is a number, not a formula)."""
    safe = frame.with_columns(
        pl.col(name).map_elements(csv_text, return_dtype=pl.String)
        for name, dtype in frame.schema.items()
        if dtype == pl.String
    )
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow([csv_text(c) for c in frame.columns])
    return header.getvalue() + safe.write_csv(include_header=False)
