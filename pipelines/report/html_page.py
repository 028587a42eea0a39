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

# Tables longer than this are folded (<details>) unless told otherwise: the page stays
# short, and the summary line says what opens.
FOLD_ROWS = 12


@dataclass(frozen=True)
class Table:
    """A table of the report; `name` is its file stem under tables/.

    `folded`: shown closed under a one-line summary (None: when it has more than FOLD_ROWS
    rows). `references`: model names shown as reference rows/columns (the baselines).
    `marks`: {(row index, column): "best" | "second"}, cells shown bold / underlined."""

    name: str
    title: str
    frame: pl.DataFrame
    note: str = ""
    folded: bool | None = None
    references: tuple[str, ...] = ()
    marks: dict[tuple[int, str], str] = field(default_factory=dict)


@dataclass(frozen=True)
class Figure:
    """A PNG under the report directory, referenced by its relative path; the caption
    (`title`, then `note`: how to read it) stands above the image."""

    path: str
    title: str
    note: str = ""


@dataclass(frozen=True)
class Heading:
    """A sub-heading inside a section (h3), with an optional line of text under it."""

    title: str
    note: str = ""


Block = Table | Figure | Heading


@dataclass
class Section:
    """A titled part of the page; with no tables or figures it shows `empty` (why there is
    no data)."""

    title: str
    intro: str
    blocks: list[Block] = field(default_factory=list)
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


def _mark(table: Table, row: int, column: str) -> str:
    """` best` / ` second` for a marked cell (a CSS class), else nothing."""
    mark = table.marks.get((row, column))
    return f" {mark}" if mark else ""


def _table_html(table: Table) -> str:
    columns = table.frame.columns
    references = set(table.references)
    head = "".join(
        f"<th{' class=ref' if c in references else ''}>{html.escape(c)}</th>" for c in columns
    )
    model_at = columns.index("model") if "model" in columns else None
    rows = []
    for r, row in enumerate(table.frame.iter_rows()):
        tds = "".join(
            f'<td class="{"num" if isinstance(v, int | float) else "txt"}'
            f"{' ref' if columns[i] in references else ''}"
            f"{_mark(table, r, columns[i])}"
            f'">{html.escape(cell(v))}</td>'
            for i, v in enumerate(row)
        )
        reference = model_at is not None and row[model_at] in references
        rows.append(f'<tr class="ref">{tds}</tr>' if reference else f"<tr>{tds}</tr>")
    links = (
        f'<a href="tables/{table.name}.csv">CSV</a> · <a href="tables/{table.name}.md">Markdown</a>'
    )
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    body = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    folded = table.folded if table.folded is not None else table.frame.height > FOLD_ROWS
    if folded:
        size = f"{table.frame.height} rows × {len(columns)} columns"
        return (
            f'<details class="table" id="{table.name}"><summary>{html.escape(table.title)} '
            f'<span class="links">({size}; {links})</span></summary>{note}{body}</details>'
        )
    return (
        f'<figure class="table" id="{table.name}"><figcaption>{html.escape(table.title)} '
        f'<span class="links">({links})</span></figcaption>{note}{body}</figure>'
    )


def _figure_html(figure: Figure) -> str:
    title = html.escape(figure.title)
    note = f' <span class="note">{html.escape(figure.note)}</span>' if figure.note else ""
    return (
        f'<figure class="plot"><figcaption>{title}.{note}</figcaption>'
        f'<img src="{html.escape(figure.path)}" alt="{title}"></figure>'
    )


def _block_html(block: Block) -> str:
    if isinstance(block, Table):
        return _table_html(block)
    if isinstance(block, Figure):
        return _figure_html(block)
    note = f'<p class="note">{html.escape(block.note)}</p>' if block.note else ""
    return f"<h3>{html.escape(block.title)}</h3>{note}"


CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1300px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;
margin:1.6em 0 .4em}h3{font-size:1em;margin:1em 0 .3em}p{margin:.3em 0}
table{border-collapse:collapse;font-size:.8em;margin:.3em 0 .8em}
th,td{border:1px solid #ccc;padding:.15em .45em}th{background:#f3f3f3;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.best{font-weight:700}td.second{text-decoration:underline}
tr.ref td,td.ref,th.ref{font-style:italic;color:#666;background:#f7f7f2}
tr.ref:first-of-type td,tr:not(.ref)+tr.ref td{border-top:2px solid #999}
figure{margin:.6em 0 1.2em;overflow-x:auto}
figure.plot{display:inline-table;vertical-align:top;margin-right:1.5em}
figure.plot figcaption{display:table-caption;caption-side:top}
figcaption{font-weight:600;margin:0 0 .3em}
details{margin:.2em 0;overflow-x:auto}summary{cursor:pointer;font-weight:600;padding:.15em 0}
.links{font-weight:normal;font-size:.85em}.note,.empty{color:#555;font-weight:normal}
.empty{font-style:italic}img{max-width:100%;border:1px solid #eee;display:block}
nav ol{columns:3;font-size:.9em;margin:.3em 0}nav li{margin:.05em 0}
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


def page(title: str, subtitle: str, sections: list[Section], links: str = "") -> str:
    """The whole HTML document; `links` is trusted markup put under the subtitle."""
    nav = "".join(
        f'<li><a href="#s{i}">{html.escape(s.title)}</a></li>' for i, s in enumerate(sections)
    )
    parts = []
    for i, section in enumerate(sections):
        body = [f'<h2 id="s{i}">{html.escape(section.title)}</h2>']
        body.append(f"<p>{html.escape(section.intro)}</p>")
        if not any(isinstance(b, Table | Figure) for b in section.blocks):
            body.append(f'<p class="empty">No data: {html.escape(section.empty)}</p>')
        else:
            body += [_block_html(block) for block in section.blocks]
        parts.append(f"<section>{''.join(body)}</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style>"
        f"<script>{CHECK_IMAGES}</script></head>"
        f'<body data-images-ok="pending"><h1>{html.escape(title)}</h1>'
        f"<p>{html.escape(subtitle)}</p>{links}<nav><ol>{nav}</ol></nav>{''.join(parts)}"
        "</body></html>\n"
    )


def write_report(
    out: Path, title: str, subtitle: str, sections: list[Section], links: str = ""
) -> Path:
    """Writes every table's CSV/Markdown copy and index.html; returns the page's path."""
    for section in sections:
        for block in section.blocks:
            if isinstance(block, Table):
                write_table(out, block)
    index = out / "index.html"
    write_bytes_atomic(index, page(title, subtitle, sections, links).encode())
    return index


def table_blocks(
    name: str,
    title: str,
    frame: pl.DataFrame,
    note: str = "",
    folded: bool | None = None,
    references: list[str] | tuple[str, ...] = (),
    marks: dict[tuple[int, str], str] | None = None,
) -> list[Block]:
    """[the Table] for a frame with rows, [] for an empty one (its section then says why)."""
    if frame.is_empty():
        return []
    return [Table(name, title, frame, note, folded, tuple(references), marks or {})]
