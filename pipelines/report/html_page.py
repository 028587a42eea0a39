"""The report page: sections of tables, figures and notes -> one static HTML file.

No network assets: the CSS is inline, figures are relative PNG files, and the only script is
inline. It marks `<body data-images-loaded="N/M" data-images-ok="true|false">` once the
page has loaded, so a headless browser can check that every figure decoded.
Every table is also written as `tables/<name>.csv` and `tables/<name>.md`; text in all
three is escaped (pipelines/report/escape.py), so a model called `<script>` stays text.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.report.escape import csv_table, markdown_text
from store.atomic import write_bytes_atomic


@dataclass(frozen=True)
class Table:
    """A table of the report; `name` is its file stem under tables/."""

    name: str
    title: str
    frame: pl.DataFrame
    note: str = ""


@dataclass(frozen=True)
class Figure:
    """A PNG under the report directory, referenced by its relative path."""

    path: str
    title: str


@dataclass
class Section:
    """A titled part of the page; with no blocks it shows `empty` (why there is no data)."""

    title: str
    intro: str
    blocks: list[Table | Figure] = field(default_factory=list)
    empty: str = ""


def cell(value: object) -> str:
    """The text of a cell in Markdown and HTML (CSV keeps polars' own formatting)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if value != value else repr(round(value, 4))  # NaN -> blank
    return str(value)


def markdown(frame: pl.DataFrame) -> str:
    """A GitHub-flavoured Markdown table; text is escaped (no live markup, no `|` splits)."""
    lines = ["| " + " | ".join(markdown_text(c) for c in frame.columns) + " |"]
    lines.append("|" + "---|" * len(frame.columns))
    for row in frame.iter_rows():
        lines.append("| " + " | ".join(markdown_text(cell(v)) for v in row) + " |")
    return "\n".join(lines) + "\n"


def write_table(out: Path, table: Table) -> None:
    """tables/<name>.csv and tables/<name>.md, each written atomically."""
    frame = table.frame
    write_bytes_atomic(out / "tables" / f"{table.name}.csv", csv_table(frame).encode())
    write_bytes_atomic(out / "tables" / f"{table.name}.md", markdown(frame).encode())


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.frame.columns)
    rows = []
    for row in table.frame.iter_rows():
        tds = "".join(
            f'<td class="{"num" if isinstance(v, int | float) else "txt"}">'
            f"{html.escape(cell(v))}</td>"
            for v in row
        )
        rows.append(f"<tr>{tds}</tr>")
    links = (
        f'<a href="tables/{table.name}.csv">CSV</a> · <a href="tables/{table.name}.md">Markdown</a>'
    )
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return (
        f'<figure class="table" id="{table.name}"><figcaption>{html.escape(table.title)} '
        f'<span class="links">({links})</span></figcaption>{note}'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></figure>"
    )


def _figure_html(figure: Figure) -> str:
    title = html.escape(figure.title)
    return (
        f'<figure class="plot"><img src="{html.escape(figure.path)}" alt="{title}">'
        f"<figcaption>{title}</figcaption></figure>"
    )


CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1300px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.2em .5em}th{background:#f3f3f3;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1em 0;overflow-x:auto}figcaption{font-weight:600;margin:.3em 0}
.links{font-weight:normal;font-size:.85em}.note,.empty{color:#555}.empty{font-style:italic}
img{max-width:100%;border:1px solid #eee}nav li{margin:.1em 0}
"""

# Runs after every image has loaded or failed: `complete` is then true for both, and a
# failed or empty image has naturalWidth 0.
CHECK_IMAGES = """
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var ok = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.dataset.imagesLoaded = ok + "/" + images.length;
  document.body.dataset.imagesOk = String(ok === images.length);
});
"""


def page(title: str, subtitle: str, sections: list[Section]) -> str:
    """The whole HTML document."""
    nav = "".join(
        f'<li><a href="#s{i}">{html.escape(s.title)}</a></li>' for i, s in enumerate(sections)
    )
    parts = []
    for i, section in enumerate(sections):
        body = [f'<h2 id="s{i}">{html.escape(section.title)}</h2>']
        body.append(f"<p>{html.escape(section.intro)}</p>")
        if not section.blocks:
            body.append(f'<p class="empty">No data: {html.escape(section.empty)}</p>')
        for block in section.blocks:
            body.append(_table_html(block) if isinstance(block, Table) else _figure_html(block))
        parts.append(f"<section>{''.join(body)}</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style>"
        f"<script>{CHECK_IMAGES}</script></head>"
        f'<body data-images-ok="pending"><h1>{html.escape(title)}</h1>'
        f"<p>{html.escape(subtitle)}</p><nav><ol>{nav}</ol></nav>{''.join(parts)}"
        "</body></html>\n"
    )


def write_report(out: Path, title: str, subtitle: str, sections: list[Section]) -> Path:
    """Writes every table's CSV/Markdown copy and index.html; returns the page's path."""
    for section in sections:
        for block in section.blocks:
            if isinstance(block, Table):
                write_table(out, block)
    index = out / "index.html"
    write_bytes_atomic(index, page(title, subtitle, sections).encode())
    return index
