"""The sample browser: DIR/samples.html, an index of the tasks and setups, and one page per
task, setup and ITEMS_PER_PAGE items (DIR/samples/pages/<task>--<setup>--<n>.html), each
item with its image, its prompt whole and the gold answer once, then every model's output
and verdict (right, wrong, invalid output, engine error). No page holds every row: at 45
models one page held 345,000 rows (277 MB) and no browser rendered it (issue 50).

A page filters its rows by model and verdict with one inline script; the choice lives in the
URL hash (`...--1.html#model=oracle&verdict=wrong`). The script sets `<body
data-visible="N">`, the answers that match. Beside each page, the same data as JSON
(`<page>.json`: items, images, prompts, answers, verdicts) for other readers (a live view).

A rerun rebuilds only what changed: each page's data is hashed with the templates, the
hashes kept in samples/manifest.json; a page whose hash the previous report holds is linked
from it, not rendered again. Images: sample_images.py (one file per image hash, kept).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
from markupsafe import Markup

from geometry.item import SETUPS
from pipelines.report.provenance import Record
from pipelines.report.sample_images import item_images, reuse, write_file
from pipelines.report.tables import model_order, model_tags
from pipelines.report.templating import render, template_source
from store.shards import ERROR_COLUMN

ITEMS_PER_PAGE = 10
OUTPUT_CHARS = 400  # a rambling model's output is cut here on the page
MANIFEST = "samples/manifest.json"
PAGES = "samples/pages"
VERDICTS = ("right", "wrong", "invalid output", "engine error")
CSS_CLASS = {"right": "right", "wrong": "wrong", "invalid output": "invalid"}

SCRIPT = """
function filters() {
  var params = new URLSearchParams(location.hash.slice(1));
  ["model", "verdict"].forEach(function (name) {
    document.getElementById("f-" + name).value = params.get(name) || "";
  });
  apply(false);
}
function apply(remember) {
  var chosen = {}, params = new URLSearchParams(), visible = 0;
  ["model", "verdict"].forEach(function (name) {
    chosen[name] = document.getElementById("f-" + name).value;
    if (chosen[name]) { params.set(name, chosen[name]); }
  });
  document.querySelectorAll("section.item").forEach(function (item) {
    var shown = 0;
    item.querySelectorAll("tr.sample").forEach(function (row) {
      var ok = (!chosen.model || row.dataset.model === chosen.model) &&
               (!chosen.verdict || row.dataset.verdict === chosen.verdict);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    item.hidden = shown === 0;
    visible += shown;
  });
  document.body.dataset.visible = String(visible);
  document.getElementById("count").textContent = visible + " of " + document.body.dataset.rows +
    " answers match";
  if (remember) {
    try { history.replaceState(null, "", "#" + params.toString()); } catch (e) {}
  }
}
window.addEventListener("DOMContentLoaded", filters);
window.addEventListener("hashchange", filters);
"""

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1400px;color:#222;padding:0 1em}
table{border-collapse:collapse;font-size:.8em}th,td{border:1px solid #ccc;padding:.2em .4em;
vertical-align:top}th{background:#f3f3f3}
.item{border-top:2px solid #999;margin-top:1em}.item h2{font-size:1em;margin:.4em 0}
.head{display:flex;gap:1em;align-items:flex-start;margin-bottom:.4em}
.prompt{white-space:pre-wrap;max-width:60em;word-break:break-word;font-size:.85em}
.prompt summary{cursor:pointer;color:#555}.gold{margin:0 0 0 1em;white-space:nowrap}
.out{white-space:pre-wrap;max-width:50em;word-break:break-word}
.right{background:#e6f4e6}.wrong{background:#fbe9e7}.invalid{background:#fff4d6}
.error{background:#eee}img{width:140px;border:1px solid #ddd}label{margin-right:1em}
a.page{margin-right:.2em}
.tag{font-size:.75em;color:#7a4b00;background:#fff1d6;border:1px solid #e0b060;
border-radius:3px;padding:0 .25em;white-space:nowrap}
"""


def verdict_expr() -> pl.Expr:
    """How a row came out: engine error, invalid output, right or wrong."""
    error = pl.col(ERROR_COLUMN).is_not_null() & (pl.col(ERROR_COLUMN) != "")
    return (
        pl.when(error).then(pl.lit("engine error"))
        .when(~pl.col("valid").fill_null(False)).then(pl.lit("invalid output"))
        .when(pl.col("correct").fill_null(False)).then(pl.lit("right"))
        .otherwise(pl.lit("wrong"))
    )  # fmt: skip


def slug(text: str) -> str:
    """A file-name part for a task or setup (results are untrusted: no separators, no
    dots leading); the hash keeps two names that slug alike apart."""
    plain = re.sub(r"[^A-Za-z0-9_-]+", "_", text)[:60]
    return plain if plain == text else f"{plain}_{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def page_name(task: str, setup: str, number: int) -> str:
    """The file stem of one page: task, setup and page number."""
    return f"{slug(task)}--{slug(setup)}--{number}"


def _ordered(df: pl.DataFrame) -> pl.DataFrame:
    """Rows by task, setup (the README's order), item and the report's model order, with
    each row's verdict and its item's page number within its task and setup."""
    rank = {m: i for i, m in enumerate(model_order(df))}
    setups = {s: i for i, s in enumerate(SETUPS)}
    frame = df
    if ERROR_COLUMN not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.String).alias(ERROR_COLUMN))
    for column in ("system_prompt", "prompt", "generated_text", "answer"):
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(column))
    return (
        frame.with_columns(
            _m=pl.col("model").replace_strict(rank, return_dtype=pl.Int64),
            _s=pl.col("setup").replace_strict(setups, default=len(setups), return_dtype=pl.Int64),
            verdict=verdict_expr(),
        )
        .sort("task", "_s", "item_id", "_m")
        .with_columns(
            _page=(pl.col("item_id").rank("dense").over("task", "setup") - 1) // ITEMS_PER_PAGE + 1
        )
    )


def _output(row: dict[str, Any]) -> str:
    text = row["generated_text"] or row[ERROR_COLUMN] or ""
    return text[:OUTPUT_CHARS] + " …" if len(text) > OUTPUT_CHARS else text


def _page_data(
    part: pl.DataFrame, images: dict[tuple[str, str], str], tags: dict[str, str]
) -> list[dict[str, Any]]:
    """The items of one page, each with every model's answer (the JSON copy's `items`)."""
    items: list[dict[str, Any]] = []
    columns = ["item_id", "setup", "system_prompt", "prompt", "answer", "model", "verdict",
               "generated_text", ERROR_COLUMN]  # fmt: skip
    for row in part.select(columns).iter_rows(named=True):
        if not items or items[-1]["item_id"] != row["item_id"]:
            items.append({
                "item_id": row["item_id"],
                "image": images.get((row["item_id"], row["setup"])),
                "system_prompt": row["system_prompt"] or "",
                "prompt": row["prompt"] or "",
                "answer": row["answer"] or "",
                "answers": [],
            })  # fmt: skip
        verdict = row["verdict"]
        items[-1]["answers"].append({
            "model": row["model"], "tag": tags.get(row["model"]), "output": _output(row),
            "verdict": verdict, "css": CSS_CLASS.get(verdict, "error"),
        })  # fmt: skip
    return items


def samples_page(
    df: pl.DataFrame, records: list[Record], out: Path, previous: Path | None = None
) -> Path:
    """Writes DIR/samples.html and the pages and images under DIR/samples/; returns the
    index's path. `previous`: the report folder this one replaces (its unchanged pages and
    images are linked, not made again)."""
    rows = _ordered(df)
    wanted = {
        (i, s) for i, s in rows.select("item_id", "setup").unique().iter_rows() if s != "text"
    }
    images, missing, _counts = item_images(records, wanted, out, previous)
    tags = model_tags(df)
    models = model_order(df)
    model_list = [{"model": m, "tag": tags.get(m)} for m in models]
    old = _manifest(previous)
    manifest: dict[str, str] = {}
    version = hashlib.sha256(
        (template_source("samples_page.html.j2") + SCRIPT + CSS).encode()
    ).hexdigest()
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for (task, setup), group in rows.group_by("task", "setup", maintain_order=True):
        task, setup = str(task), str(setup)
        pages = int(group["_page"].max())  # type: ignore[arg-type]
        total = group["item_id"].n_unique()
        hrefs = [f"{PAGES}/{page_name(task, setup, n)}.html" for n in range(1, pages + 1)]
        right = float(group.select(pl.col("verdict").eq("right").mean()).item() or 0.0)
        cells[(task, setup)] = {
            "count": total, "right_pct": f"{100 * right:.1f}",
            "pages": [{"number": n, "href": h} for n, h in enumerate(hrefs, 1)],
        }  # fmt: skip
        for number, part in enumerate(group.partition_by("_page", maintain_order=True), 1):
            items = _page_data(part, images, tags)
            first = (number - 1) * ITEMS_PER_PAGE + 1
            values = {
                "task": task, "setup": setup, "page": number, "pages": pages,
                "first": first, "last": first + len(items) - 1, "items_total": total,
                "rows": part.height, "models": model_list, "verdicts": VERDICTS,
                "previous": Path(hrefs[number - 2]).name if number > 1 else "",
                "next": Path(hrefs[number]).name if number < pages else "",
                "items": items,
            }  # fmt: skip
            data = json.dumps(values, ensure_ascii=False, sort_keys=True)
            digest = hashlib.sha256((version + data).encode()).hexdigest()
            name = page_name(task, setup, number)
            manifest[name] = digest
            _write_page(out, previous, name, data, values, digest == old.get(name))
    _write_index(out, rows, cells, model_list, missing)
    write_file(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
    return out / "samples.html"


def _manifest(previous: Path | None) -> dict[str, str]:
    """The page hashes of the previous report; {} when there is none or it does not read."""
    if previous is None or not (previous / MANIFEST).is_file():
        return {}
    try:
        data = json.loads((previous / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_page(
    out: Path, previous: Path | None, name: str, data: str, values: dict[str, Any], same: bool
) -> None:
    """One page and its JSON copy: linked from the previous report when its hash is the
    same, else rendered."""
    html_path, json_path = out / PAGES / f"{name}.html", out / PAGES / f"{name}.json"
    if (
        same
        and previous is not None
        and reuse(previous / PAGES / f"{name}.html", html_path)
        and reuse(previous / PAGES / f"{name}.json", json_path)
    ):
        return
    page = render("samples_page.html.j2", css=Markup(CSS), script=Markup(SCRIPT), **values)
    write_file(html_path, page.encode())
    write_file(json_path, data.encode())


def _write_index(
    out: Path,
    rows: pl.DataFrame,
    cells: dict[tuple[str, str], dict[str, Any]],
    model_list: list[dict[str, Any]],
    missing: str,
) -> None:
    setups = [s for s in SETUPS if s in set(rows["setup"])] + sorted(
        set(rows["setup"]) - set(SETUPS)
    )
    tasks = [
        {"task": t, "cells": [cells.get((t, s)) for s in setups]}
        for t in sorted(rows["task"].unique().to_list())
    ]
    counts = rows.group_by("model").agg(
        pl.len().alias("n"),
        *[pl.col("verdict").eq(v).sum().alias(k) for k, v in
          (("right", "right"), ("wrong", "wrong"), ("invalid", "invalid output"),
           ("error", "engine error"))],
    )  # fmt: skip
    by_model = {r["model"]: r for r in counts.iter_rows(named=True)}
    models = [m | by_model[m["model"]] for m in model_list]
    page = render(
        "samples_index.html.j2", css=Markup(CSS), setups=setups, tasks=tasks, models=models,
        items_per_page=ITEMS_PER_PAGE, rows_total=rows.height, note=missing,
        pages_total=sum(len(c["pages"]) for c in cells.values()),
    )  # fmt: skip
    write_file(out / "samples.html", page.encode())
