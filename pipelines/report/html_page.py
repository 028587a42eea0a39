"""The report page: sections of tables, figures and notes -> one static HTML file.

No network assets: the CSS is inline, figures are relative PNG files, and the only script is
inline. It marks `<body data-images-loaded="N/M" data-images-ok="true|false"
data-height="PX" data-widest-image="PX">` once the page has loaded, so a headless browser
can check that every figure decoded, how tall the page is (folded parts closed) and how wide
it shows the widest figure.
Every table is also written as `tables/<name>.csv` and `tables/<name>.md`; text in all
three is escaped (pipelines/report/escape.py), so a model called `<script>` stays text.

Tables and figures are numbered in the order the page shows them (folded ones included).
Models that are not models under test (random weights, baselines: `tags`) carry a tag in
every table, as a row (the `model` column) or a column head. Numbers print with one decimal
unless a table says otherwise (MSE keeps three significant digits); column heads are prose.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from markupsafe import Markup

from pipelines.report.escape import csv_table, markdown_text
from pipelines.report.templating import render
from store.atomic import write_bytes_atomic

# Tables longer than this are folded (<details>) unless told otherwise: the page stays
# short, and the summary line says what opens.
FOLD_ROWS = 12

# A column named `X, 95% interval` beside a column X holds X's 95% interval, "[low, high]":
# the page prints it inside X's cell, under the value (beside it as a column of its own, it
# doubled a wide table's width); the CSV and Markdown copies keep it as its own column.
INTERVAL_SUFFIX = ", 95% interval"

# The widest a figure is shown in a 1280 px window (measured in Chromium: the body's
# max-width and 1em padding, the figure's 1.5em right margin); a wider PNG is scaled down to
# it (img max-width 100%), a narrower one shown at its natural size.
FIGURE_MAX_PX = 1224

# Column heads as the page prints them; the CSV and Markdown copies keep the names programs
# read. A head not listed prints as it is (task IDs, model names, prose already).
HEADINGS = {
    "n": "items",
    "accuracy": "accuracy (%)",
    "answered_only_accuracy": "accuracy over answered items (%)",
    "unanswered": "unanswered items",
    "ci_low": "95% interval, low",
    "ci_high": "95% interval, high",
    "invalid_rate": "invalid outputs (%)",
    "engine_error_rate": "engine errors (%)",
    "out_of_budget": "out of budget",
    "binary": "binary (%)",
    "binary_n": "binary items",
    "multiple_choice": "multiple choice (%)",
    "multiple_choice_n": "multiple-choice items",
    "classification": "classification mean (%)",
    "best_model": "best model",
    "best_classification": "its classification mean (%)",
    "human_classification": "human (%)",
    "best_binary": "best binary (%)",
    "best_binary_model": "best on binary",
    "best_multiple_choice": "best multiple choice (%)",
    "best_multiple_choice_model": "best on multiple choice",
    "human_multiple_choice": "human multiple choice (%)",
    "median_seconds": "median seconds",
    "share": "share (%)",
    "broken_data": "broken data",
    "condition_type": "condition type",
    "object_type": "object type",
    "solved_public": "solved (public rule)",
    "mean_rounds_to_success": "mean rounds to success",
    "error_category": "error category (ours)",
    "error_category_public": "error category (public)",
    "problems %": "share of problems (%)",
    "solved_by_round": "solved by this round",
    "solved_public_by_round": "solved by this round (public rule)",
    "first_round_failures": "round-1 failures",
    "first_round_public_failures": "round-1 failures (public rule)",
    "fixed_later": "fixed later",
    "fixed_later_public": "fixed later (public rule)",
    "from_kind": "from",
    "to_kind": "to",
    "% of from_kind": "% of from",
    "dsl_errors_final_ours": "DSL errors, final round (ours)",
    "missing_objects_final_ours": "missing objects, final round (ours)",
    "failed_conditions_final_ours": "failed conditions, final round (ours)",
    "dsl_errors_steps_public": "DSL errors, all steps (public)",
    "hallucinations_per_problem_public": "hallucinations per problem (public)",
    "mean_recovery_steps_public": "mean recovery steps (public)",
    "missing_objects_steps_public": "missing objects, all steps (public)",
    "failed_conditions_steps_public": "failed conditions, all steps (public)",
    "problem_id": "problem",
    "item_id": "item",
}


@dataclass(frozen=True)
class Table:
    """A table of the report; `name` is its file stem under tables/.

    `folded`: shown closed under a one-line summary (None: when it has more than FOLD_ROWS
    rows). `marks`: {(row index, column): "best" | "second"}, cells shown bold / underlined.
    `digits`: significant digits of its numbers (None: one decimal)."""

    name: str
    title: str
    frame: pl.DataFrame
    note: str = ""
    folded: bool | None = None
    marks: dict[tuple[int, str], str] = field(default_factory=dict)
    digits: int | None = None


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
    no data). A `folded` section shows its title only until it is opened."""

    title: str
    intro: str
    blocks: list[Block] = field(default_factory=list)
    empty: str = ""
    folded: bool = False


def cell(value: object) -> str:
    """The text of a cell in the Markdown copy (CSV keeps polars' own formatting): floats
    to 4 decimals, NaN and None blank."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if value != value else repr(round(value, 4))
    return str(value)


def shown(value: object, digits: int | None = None) -> str:
    """The text of a cell on the page: floats with one decimal (every percentage), or
    `digits` significant digits (a value with more integer digits than that whole, with
    thousands separators, never in exponent form); NaN and None blank."""
    if isinstance(value, float) and value == value:
        if digits is None:
            return f"{value:.1f}"
        return f"{value:,.0f}" if abs(value) >= 10**digits else f"{value:.{digits}g}"
    return cell(value)


def prose(text: str) -> str:
    """Prose for the page (titles, notes, section text), escaped and without Markdown's
    code and bold marks, which HTML would show literally (messages shared with the
    terminal quote commands in backticks)."""
    return html.escape(text.replace("`", "").replace("**", ""))


def heading(column: str) -> str:
    """A column's head on the page (HEADINGS, else the name itself)."""
    return HEADINGS.get(column, column)


def markdown(frame: pl.DataFrame) -> str:
    """A GitHub-flavoured Markdown table; text is escaped (no live markup, no `|` splits)."""
    lines = ["| " + " | ".join(markdown_text(c) for c in frame.columns) + " |"]
    lines.append("|" + "---|" * len(frame.columns))
    for row in frame.iter_rows():
        lines.append("| " + " | ".join(markdown_text(cell(v)) for v in row) + " |")
    return "\n".join(lines) + "\n"


def tagged_copy(frame: pl.DataFrame, tags: dict[str, str]) -> pl.DataFrame:
    """The frame with a `tag` column after `model` (null for a model under test) when any
    row is tagged, so a CSV or Markdown reader sees what the page's row tags say. Tagged
    column heads stay as they are: programs read them as model names."""
    if "model" not in frame.columns or not frame["model"].is_in(list(tags)).any():
        return frame
    tag = pl.col("model").replace_strict(tags, default=None, return_dtype=pl.String)
    at = frame.columns.index("model") + 1
    columns = [*frame.columns[:at], tag.alias("tag"), *frame.columns[at:]]
    return frame.select(columns)  # a new frame: the page's own stays without the column


def write_table(out: Path, table: Table, tags: dict[str, str]) -> None:
    """tables/<name>.csv and tables/<name>.md, each written atomically, rows tagged."""
    frame = tagged_copy(table.frame, tags)
    write_bytes_atomic(out / "tables" / f"{table.name}.csv", csv_table(frame).encode())
    write_bytes_atomic(out / "tables" / f"{table.name}.md", markdown(frame).encode())


def _mark(table: Table, row: int, column: str) -> str:
    """` best`, ` second`, ` best overall` for a marked cell (CSS classes), else nothing."""
    mark = table.marks.get((row, column))
    return f" {mark}" if mark else ""


def tag_html(name: str, tags: dict[str, str]) -> str:
    """A model name, escaped, with its tag (`random weights`, `baseline`) when it has one."""
    tag = tags.get(name)
    text = html.escape(name)
    return f'{text} <span class="tag">{html.escape(tag)}</span>' if tag else text


def interval_columns(columns: list[str]) -> dict[str, str]:
    """Column -> the column holding its 95% interval (INTERVAL_SUFFIX), where both exist."""
    return {c: c + INTERVAL_SUFFIX for c in columns if c + INTERVAL_SUFFIX in columns}


def _table_html(table: Table, number: int, tags: dict[str, str]) -> str:
    columns = table.frame.columns
    spans = interval_columns(columns)
    printed = [c for c in columns if c not in spans.values()]
    head = "".join(
        f"<th class=ref>{tag_html(c, tags)}</th>"
        if c in tags
        else f"<th>{html.escape(heading(c))}</th>"
        for c in printed
    )
    model_at = columns.index("model") if "model" in columns else None
    rows = []
    for r, row in enumerate(table.frame.iter_rows(named=True)):
        tds = []
        for i, (column, v) in enumerate(row.items()):
            if column not in printed:
                continue
            text = (
                tag_html(v, tags)
                if i == model_at and isinstance(v, str)
                else html.escape(shown(v, table.digits))
            )
            if column in spans and row[spans[column]]:
                text += f' <span class="ci">{html.escape(str(row[spans[column]]))}</span>'
            kind = "num" if isinstance(v, int | float) else "txt"
            ref = " ref" if column in tags else ""
            tds.append(f'<td class="{kind}{ref}{_mark(table, r, column)}">{text}</td>')
        reference = model_at is not None and row["model"] in tags
        rows.append(
            f'<tr class="ref">{"".join(tds)}</tr>' if reference else f"<tr>{''.join(tds)}</tr>"
        )
    links = (
        f'<a href="tables/{table.name}.csv">CSV</a> · <a href="tables/{table.name}.md">Markdown</a>'
    )
    note = f'<p class="note">{prose(table.note)}</p>' if table.note else ""
    body = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    title = f"Table {number}. {prose(table.title)}"
    folded = table.folded if table.folded is not None else table.frame.height > FOLD_ROWS
    if folded:
        size = f"{table.frame.height} rows × {len(printed)} columns"
        return (
            f'<details class="table" id="{table.name}"><summary>{title} '
            f'<span class="links">({size}; {links})</span></summary>{note}{body}</details>'
        )
    return (
        f'<figure class="table" id="{table.name}"><figcaption>{title} '
        f'<span class="links">({links})</span></figcaption>{note}{body}</figure>'
    )


def _figure_html(figure: Figure, number: int) -> str:
    title = prose(figure.title)
    note = f' <span class="note">{prose(figure.note)}</span>' if figure.note else ""
    return (
        f'<figure class="plot"><figcaption>Figure {number}. {title}.{note}</figcaption>'
        f'<img src="{html.escape(figure.path)}" alt="{title}"></figure>'
    )


class _Numbers:
    """Table and figure numbers in the order the page shows them."""

    def __init__(self) -> None:
        self.tables = 0
        self.figures = 0

    def block_html(self, block: Block, tags: dict[str, str]) -> str:
        if isinstance(block, Table):
            self.tables += 1
            return _table_html(block, self.tables, tags)
        if isinstance(block, Figure):
            self.figures += 1
            return _figure_html(block, self.figures)
        note = f'<p class="note">{prose(block.note)}</p>' if block.note else ""
        return f"<h3>{prose(block.title)}</h3>{note}"


CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1300px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;
margin:1.6em 0 .4em}h3{font-size:1em;margin:1em 0 .3em}p{margin:.3em 0}
table{border-collapse:collapse;font-size:.8em;margin:.3em 0 .8em}
th,td{border:1px solid #ccc;padding:.15em .45em}th{background:#f3f3f3;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.ci{display:block;font-size:.8em;color:#666;white-space:nowrap}
td.best{font-weight:700}td.second{text-decoration:underline}
td.overall{outline:2px solid #444;outline-offset:-3px}
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
.tag{font-size:.75em;font-style:normal;color:#7a4b00;background:#fff1d6;border:1px solid #e0b060;
border-radius:3px;padding:0 .25em;white-space:nowrap}
.banner{background:#fff6e0;border:1px solid #e0b060;padding:.5em .8em;margin:.6em 0}
details.section>summary h2{display:inline-block;margin:.6em 0 .2em;border:none}
.key td,.key th{font-size:1.05em}
"""

# Runs after every image has loaded or failed: `complete` is then true for both, and a
# failed or empty image has naturalWidth 0. The height is the whole page's, as laid out.
CHECK_IMAGES = """
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var ok = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.dataset.imagesLoaded = ok + "/" + images.length;
  document.body.dataset.imagesOk = String(ok === images.length);
  document.body.dataset.height = String(document.documentElement.scrollHeight);
  var widths = images.map(function (i) { return i.clientWidth; });
  document.body.dataset.widestImage = String(Math.max.apply(null, widths.concat([0])));
});
"""


def page(
    title: str,
    subtitle: str,
    sections: list[Section],
    links: str = "",
    tags: dict[str, str] | None = None,
    banner: str = "",
) -> str:
    """The whole HTML document. `links` is trusted markup put under the subtitle; `banner`
    (text) stands above everything else; `tags`: model name -> the tag its rows and columns
    carry (random weights, baseline). The first section comes before the contents list."""
    tags = tags or {}
    numbers = _Numbers()
    shown_sections = [
        {
            "title": section.title,
            "intro": section.intro,
            "empty": section.empty,
            "folded": section.folded,
            # Tables and figures are our own markup, built (and escaped) by _Numbers.
            "blocks": [Markup(numbers.block_html(block, tags)) for block in section.blocks]
            if any(isinstance(b, Table | Figure) for b in section.blocks)
            else [],
        }
        for section in sections
    ]
    return render(
        "report_page.html.j2", title=title, subtitle=subtitle, links=Markup(links),
        banner=banner, sections=shown_sections, css=Markup(CSS), script=Markup(CHECK_IMAGES),
    )  # fmt: skip


def write_report(
    out: Path,
    title: str,
    subtitle: str,
    sections: list[Section],
    links: str = "",
    tags: dict[str, str] | None = None,
    banner: str = "",
) -> Path:
    """Writes every table's CSV/Markdown copy and index.html (`page`); returns its path."""
    for section in sections:
        for block in section.blocks:
            if isinstance(block, Table):
                write_table(out, block, tags or {})
    index = out / "index.html"
    write_bytes_atomic(index, page(title, subtitle, sections, links, tags, banner).encode())
    return index


def table_blocks(
    name: str,
    title: str,
    frame: pl.DataFrame,
    note: str = "",
    folded: bool | None = None,
    marks: dict[tuple[int, str], str] | None = None,
    digits: int | None = None,
) -> list[Block]:
    """[the Table] for a frame with rows, [] for an empty one (its section then says why)."""
    if frame.is_empty():
        return []
    return [Table(name, title, frame, note, folded, marks or {}, digits)]
