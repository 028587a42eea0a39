"""The sample browser: DIR/samples.html, every item of every task and setup with every
model's answer, filterable by task, setup and model, shown a page of PAGE_ROWS rows at a time.

Per sample row: the item's image as a small thumbnail (DIR/samples/<hash>.png, read from the
item table the run records name; none for the text setup), the whole prompt (wrapped at full
height: a scroll box once hid its end mid-sentence, issue 39; the system prompt, the same on
most rows, folded above it), the model's output, the gold answer and the verdict (right,
wrong, invalid output, engine error).

Filters are three selects and a pager driven by one inline script; the choice lives in the
URL hash (`samples.html#task=C-ACM-PST&setup=dotted&model=oracle&page=2`), so a link (or a
headless browser) opens a filtered view. The script sets `<body data-visible="N">`, the rows
that match the filters (of which one page is shown).
"""

from __future__ import annotations

import hashlib
import html
import io
from pathlib import Path

import polars as pl
import pyarrow.compute as pc
import pyarrow.parquet as pq
from PIL import Image

from geometry.item import SETUPS
from pipelines.noregeo.generate import SHARD_GLOB
from pipelines.report.html_page import tag_html
from pipelines.report.provenance import Record, items_folder
from pipelines.report.tables import model_order, model_tags
from store.atomic import write_bytes_atomic
from store.shards import ERROR_COLUMN

# Rows on one page of the browser: the page holds every row, the script shows these many.
PAGE_ROWS = 100
THUMBNAIL_PX = 140
OUTPUT_CHARS = 400  # a rambling model's output is cut here on the page

SCRIPT = """
var PAGE = PAGE_ROWS_VALUE;
function filters() {
  var params = new URLSearchParams(location.hash.slice(1));
  ["task", "setup", "model"].forEach(function (name) {
    var select = document.getElementById("f-" + name);
    select.value = params.has(name) ? params.get(name) : "";
  });
  show(parseInt(params.get("page") || "1", 10), false);
}
function apply(remember) { show(1, remember); }
function show(page, remember) {
  var chosen = {};
  var params = new URLSearchParams();
  ["task", "setup", "model"].forEach(function (name) {
    chosen[name] = document.getElementById("f-" + name).value;
    if (chosen[name]) { params.set(name, chosen[name]); }
  });
  var rows = document.querySelectorAll("tr.sample");
  var matching = [];
  rows.forEach(function (row) {
    var ok = ["task", "setup", "model"].every(function (name) {
      return !chosen[name] || row.dataset[name] === chosen[name];
    });
    row.hidden = true;
    if (ok) { matching.push(row); }
  });
  var pages = Math.max(1, Math.ceil(matching.length / PAGE));
  page = Math.min(Math.max(isNaN(page) ? 1 : page, 1), pages);
  matching.slice((page - 1) * PAGE, page * PAGE).forEach(function (row) { row.hidden = false; });
  if (page > 1) { params.set("page", String(page)); }
  document.body.dataset.visible = String(matching.length);
  document.body.dataset.page = String(page);
  document.getElementById("count").textContent = matching.length + " of " + rows.length +
    " samples match; page " + page + " of " + pages;
  document.getElementById("prev").disabled = page <= 1;
  document.getElementById("next").disabled = page >= pages;
  document.getElementById("prev").onclick = function () { show(page - 1, true); };
  document.getElementById("next").onclick = function () { show(page + 1, true); };
  if (remember) {
    try { history.replaceState(null, "", "#" + params.toString()); } catch (e) {}
  }
}
window.addEventListener("DOMContentLoaded", filters);
window.addEventListener("hashchange", filters);
""".replace("PAGE_ROWS_VALUE", str(PAGE_ROWS))

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1400px;color:#222;padding:0 1em}
table{border-collapse:collapse;font-size:.8em}th,td{border:1px solid #ccc;padding:.2em .4em;
vertical-align:top}th{background:#f3f3f3;position:sticky;top:0}
.prompt{white-space:pre-wrap;max-width:38em;word-break:break-word}
.prompt summary{cursor:pointer;color:#555}
.out{white-space:pre-wrap;max-width:22em;word-break:break-word}
.right{background:#e6f4e6}.wrong{background:#fbe9e7}.invalid{background:#fff4d6}
.error{background:#eee}img{width:THUMBpx;border:1px solid #ddd}label{margin-right:1em}
.tag{font-size:.75em;color:#7a4b00;background:#fff1d6;border:1px solid #e0b060;
border-radius:3px;padding:0 .25em;white-space:nowrap}
""".replace("THUMB", str(THUMBNAIL_PX))


def pick_samples(df: pl.DataFrame) -> pl.DataFrame:
    """Every row, ordered by task, setup, item ID and then the report's model order."""
    rank = {m: i for i, m in enumerate(model_order(df))}
    setups = {s: i for i, s in enumerate(SETUPS)}  # the README's order: text, dotted, full
    return (
        df.with_columns(
            _m=pl.col("model").replace_strict(rank, return_dtype=pl.Int64),
            _s=pl.col("setup").replace_strict(setups, return_dtype=pl.Int64),
        )
        .sort("task", "_s", "item_id", "_m")
        .drop("_m", "_s")
    )


def verdict(row: dict[str, object]) -> str:
    """How a row came out: engine error, invalid output, right or wrong."""
    if row.get(ERROR_COLUMN):
        return "engine error"
    if not row.get("valid"):
        return "invalid output"
    return "right" if row.get("correct") else "wrong"


def thumbnails(
    records: list[Record], wanted: set[tuple[str, str]], out: Path
) -> tuple[dict[tuple[str, str], str], str]:
    """Writes DIR/samples/<hash>.png for each wanted (item_id, setup) found in the item
    tables the NoReGeo runs read; returns their relative paths and a note on what is missing."""
    folders = dict.fromkeys(
        f for r in records if r.benchmark == "noregeo" and (f := items_folder(r.data))
    )
    found: dict[tuple[str, str], str] = {}
    ids = sorted({item for item, _setup in wanted})
    for folder in folders:
        for shard in sorted(Path(folder).glob(SHARD_GLOB)) if Path(folder).is_dir() else []:
            try:
                table = pq.read_table(shard, columns=["item_id", "setup", "image"])
            except (OSError, ValueError):
                continue
            table = table.filter(pc.is_in(table["item_id"], value_set=pc.cast(ids, "string")))
            for item, setup, image in zip(
                *(table[c].to_pylist() for c in table.column_names), strict=True
            ):
                key = (item, setup)
                if key not in wanted or key in found or not image:
                    continue
                name = hashlib.sha256(f"{item}/{setup}".encode()).hexdigest()[:16] + ".png"
                with Image.open(io.BytesIO(image)) as picture:
                    small = picture.convert("RGB")
                    small.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
                    buffer = io.BytesIO()
                    small.save(buffer, format="PNG", optimize=True)
                write_bytes_atomic(out / "samples" / name, buffer.getvalue())
                found[key] = f"samples/{name}"
    lacking = len(wanted) - len(found)
    note = "" if not lacking else (
        f"{lacking} image(s) not shown: the item table the runs read "
        f"({', '.join(folders) or 'not recorded'}) is not here or lacks them."
    )  # fmt: skip
    return found, note


def prompt_html(system: object, prompt: object) -> str:
    """The prompt cell: the whole user prompt, escaped and wrapped (never in a scroll box),
    and the system prompt whole inside a folded <details> above it."""
    parts = []
    if system:
        text = str(system)
        parts.append(
            f"<details><summary>system prompt ({len(text):,} characters)</summary>"
            f"{html.escape(text)}</details>"
        )
    if prompt:
        parts.append(html.escape(str(prompt)))
    return f'<div class="prompt">{"".join(parts)}</div>'


def _options(name: str, values: list[str], tags: dict[str, str] | None = None) -> str:
    """A filter's select; a tagged model's option reads `name (tag)`, its value the name."""
    tags = tags or {}
    options = "".join(
        f'<option value="{html.escape(v)}">'
        f"{html.escape(f'{v} ({tags[v]})' if v in tags else v)}</option>"
        for v in values
    )
    return (
        f'<label>{name} <select id="f-{name}" onchange="apply(true)">'
        f'<option value="">all</option>{options}</select></label>'
    )


def samples_page(df: pl.DataFrame, records: list[Record], out: Path) -> Path:
    """Writes DIR/samples.html (and its thumbnails); returns its path."""
    rows = pick_samples(df)
    images = {
        (i, s) for i, s in rows.select("item_id", "setup").unique().iter_rows() if s != "text"
    }
    found, missing = thumbnails(records, images, out)
    tags = model_tags(df)  # random-weight models and baselines, tagged as on the report
    body = []
    for row in rows.iter_rows(named=True):
        image = found.get((row["item_id"], row["setup"]))
        picture = f'<img src="{image}" alt="item image">' if image else ""
        result = verdict(row)
        output = row.get("generated_text") or row.get(ERROR_COLUMN) or ""
        if len(output) > OUTPUT_CHARS:
            output = output[:OUTPUT_CHARS] + " …"
        attrs = "".join(
            f' data-{k}="{html.escape(str(row[k]))}"' for k in ("task", "setup", "model")
        )
        cells = [
            picture,
            f"{html.escape(row['task'])}<br>{html.escape(row['setup'])}<br>"
            f"<small>{html.escape(row['item_id'])}</small>",
            tag_html(row["model"], tags),
            prompt_html(row.get("system_prompt"), row.get("prompt")),
            f'<div class="out">{html.escape(output)}</div>',
            f'<div class="out">{html.escape(row.get("answer") or "")}</div>',
            html.escape(result),
        ]
        css = {"right": "right", "wrong": "wrong", "invalid output": "invalid"}.get(result, "error")
        tds = "".join(f"<td>{c}</td>" for c in cells)
        body.append(f'<tr class="sample {css}"{attrs}>{tds}</tr>')
    selects = (
        _options("task", sorted(rows["task"].unique().to_list()))
        + _options("setup", [str(s) for s in SETUPS if s in set(rows["setup"])])
        + _options("model", model_order(rows), tags)
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("image", "task / setup / item", "model", "prompt", "output", "gold", "verdict")
    )
    note = f"<p>{html.escape(missing)}</p>" if missing else ""
    document = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>NoReGeo samples</title><style>{CSS}</style><script>{SCRIPT}</script></head>"
        '<body data-visible="pending"><h1>NoReGeo samples</h1>'
        '<p><a href="index.html">Back to the report</a>. Every item of each task and setup, '
        f"with every model's answer, {PAGE_ROWS} rows a page. Filter below; the choice is "
        "kept in the address (#task=...&amp;setup=...&amp;model=...&amp;page=...).</p>"
        f"{note}<p>{selects}"
        '<button id="prev" type="button">previous</button> '
        '<button id="next" type="button">next</button> <span id="count"></span></p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        "</body></html>\n"
    )
    path = out / "samples.html"
    write_bytes_atomic(path, document.encode())
    return path
