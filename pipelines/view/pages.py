"""The view's pages from jinja2 templates with autoescaping on: a model name, a prompt or a
reply holding markup is shown as text, never run. Figures come from the snapshot only."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import jinja2
import polars as pl

from pipelines.noregeo.intervals import WILSON_METHOD, wilson_interval
from pipelines.view.live_results import VERDICTS, Snapshot, answer_text
from store.records import model_slug

PAGE_ROWS = 50  # samples per page: a page stays small whatever the results hold
MAX_QUERY = 200  # characters of a search; longer ones are cut
INTERVAL = WILSON_METHOD  # named as the report names it

_BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
{% if refresh %}<meta http-equiv="refresh" content="{{ refresh }}">{% endif %}
<title>{{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.unreadable td { color: #a00; }
pre { white-space: pre-wrap; margin: 0; max-width: 60em; }
form label { margin-right: 0.8em; }
</style></head><body>
<nav><a href="/">models</a> · <a href="/samples">samples</a></nav>
{% block body %}{% endblock %}
</body></html>
"""

_INDEX = """{% extends "base" %}{% block body %}
<h1>Results at {{ location }}</h1>
<p id="freshness">{{ shards }} shard(s) read; this page reloads every {{ refresh }} s.</p>
{% if not models %}<p id="empty">No result rows yet under {{ location }}/noregeo; the page
fills as shards land.</p>{% endif %}
<table id="models"><thead><tr><th>model</th><th>rows</th><th>of expected</th>
<th>unanswered (engine errors)</th><th>invalid</th><th>accuracy %</th><th>{{ interval }}</th>
</tr></thead><tbody>
{% for m in models %}<tr data-model="{{ m.model }}">
<td><a href="/samples?model={{ m.model | urlencode }}">{{ m.model }}</a></td>
<td class="n">{{ m.rows }}</td><td class="n">{{ m.expected }}</td>
<td class="n">{{ m.unanswered }}</td><td class="n">{{ m.invalid }}</td>
<td class="n">{{ "%.1f" | format(m.accuracy) }}</td>
<td class="n">{{ "%.1f" | format(m.low) }} - {{ "%.1f" | format(m.high) }}</td></tr>
{% endfor %}</tbody></table>
<p>Accuracy counts every row the model has: unanswered and invalid rows are wrong, as the
paper scores them.</p>
{% if unreadable %}<h2>Unreadable shards (skipped, left in place)</h2>
<table id="unreadable"><tbody>{% for path, why in unreadable %}
<tr class="unreadable"><td>{{ path }}</td><td>{{ why }}</td></tr>{% endfor %}
</tbody></table>{% endif %}
{% endblock %}"""

_SAMPLES = """{% extends "base" %}{% block body %}
<h1>Samples</h1>
<form method="get" action="/samples">
{% for name, values in choices %}<label>{{ name }}
<select name="{{ name }}"><option value="">all</option>
{% for v in values %}<option value="{{ v }}"
{%- if filters[name] == v %} selected{% endif %}>{{ v }}</option>
{% endfor %}</select></label>{% endfor %}
<label>text <input name="q" value="{{ filters.q }}" maxlength="{{ max_query }}"></label>
<button type="submit">show</button></form>
<p id="count">{{ total }} row(s) match; page {{ page }} of {{ pages }}.
{% if page > 1 %}<a href="{{ link(page - 1) }}">previous</a>{% endif %}
{% if page < pages %}<a href="{{ link(page + 1) }}">next</a>{% endif %}</p>
<table id="samples"><thead><tr><th>model</th><th>item</th><th>setup</th><th>verdict</th>
<th>gold</th><th>reply</th><th>prompt</th></tr></thead><tbody>
{% for r in rows %}<tr data-verdict="{{ r.verdict }}"><td>{{ r.model }}</td><td>{{ r.item_id }}</td>
<td>{{ r.setup }}</td><td>{{ r.verdict }}</td><td>{{ r.gold }}</td>
<td><pre>{{ r.reply }}</pre></td>
<td><details><summary>prompt</summary><pre>{{ r.prompt }}</pre></details></td></tr>
{% endfor %}</tbody></table>
{% endblock %}"""

ENV = jinja2.Environment(
    loader=jinja2.DictLoader({"base": _BASE, "index": _INDEX, "samples": _SAMPLES}),
    autoescape=True,  # every value is text; the tests put <script> in a model name
    undefined=jinja2.StrictUndefined,
)


def model_status(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Per model: rows, the rows its runs expect, unanswered, invalid, accuracy and its
    interval."""
    rows = snapshot.rows
    if rows.height == 0:
        return []
    counts = (
        rows.group_by("model")
        .agg(
            pl.len().alias("rows"),
            (pl.col("verdict") == "right").sum().alias("right"),
            (pl.col("verdict") == "unanswered").sum().alias("unanswered"),
            (pl.col("verdict") == "invalid").sum().alias("invalid"),
        )
        .sort("model")
    )
    out = []
    for row in counts.iter_rows(named=True):
        low, high = wilson_interval(int(row["right"]), int(row["rows"]))
        expected = snapshot.expected.get(model_slug(row["model"]))
        out.append(
            {
                **row,
                "expected": expected if expected else "-",
                "accuracy": 100 * row["right"] / row["rows"],
                "low": low,
                "high": high,
            }
        )
    return out


def index_page(snapshot: Snapshot, location: str, refresh_s: int) -> str:
    """The models page."""
    return ENV.get_template("index").render(
        title=f"geosee view: {location}",
        location=location,
        refresh=refresh_s,
        shards=snapshot.shards,
        models=model_status(snapshot),
        interval=INTERVAL,
        unreadable=sorted(snapshot.unreadable.items()),
    )


@dataclass(frozen=True)
class Filters:
    """The samples page's query: empty strings select everything."""

    model: str = ""
    task: str = ""
    setup: str = ""
    verdict: str = ""
    q: str = ""

    @classmethod
    def from_query(cls, query: dict[str, list[str]]) -> Filters:
        """From a parsed query string; the first value of each field, bounded."""

        def first(name: str) -> str:
            return (query.get(name) or [""])[0][:MAX_QUERY]

        return cls(first("model"), first("task"), first("setup"), first("verdict"), first("q"))

    def __getitem__(self, name: str) -> str:  # the template reads filters[name]
        return str(getattr(self, name))


def matching(snapshot: Snapshot, filters: Filters) -> pl.DataFrame:
    """The snapshot's rows that the filters select, with their prompts, in a fixed order."""
    rows = snapshot.rows
    for name in ("model", "task", "setup", "verdict"):
        value = filters[name]
        if value:
            rows = rows.filter(pl.col(name) == value)
    rows = rows.join(snapshot.prompts, on=["item_id", "setup"], how="left")
    if filters.q:
        needle = filters.q.lower()
        text = pl.concat_str(
            [pl.col(c).fill_null("") for c in ("prompt", "generated_text", "answer")],
            separator="\n",
        ).str.to_lowercase()
        rows = rows.filter(text.str.contains(needle, literal=True))
    return rows.sort("model", "task", "item_id", "setup")


def samples_page(snapshot: Snapshot, filters: Filters, page: int) -> str:
    """One page of the rows the filters select."""
    rows = matching(snapshot, filters)
    pages = max(1, math.ceil(rows.height / PAGE_ROWS))
    page = min(max(page, 1), pages)
    shown = rows.slice((page - 1) * PAGE_ROWS, PAGE_ROWS)
    choices = [
        ("model", sorted(snapshot.rows["model"].unique().to_list())),
        ("task", sorted(snapshot.rows["task"].unique().to_list())),
        ("setup", sorted(snapshot.rows["setup"].unique().to_list())),
        ("verdict", list(VERDICTS)),
    ]

    def link(number: int) -> str:
        fields = {k: filters[k] for k in ("model", "task", "setup", "verdict", "q") if filters[k]}
        return "/samples?" + urlencode({**fields, "page": number})

    return ENV.get_template("samples").render(
        title="geosee view: samples",
        refresh=0,
        choices=choices,
        filters=filters,
        max_query=MAX_QUERY,
        total=rows.height,
        page=page,
        pages=pages,
        link=link,
        rows=[
            {
                "model": r["model"],
                "item_id": r["item_id"],
                "setup": r["setup"],
                "verdict": r["verdict"],
                "gold": answer_text(r["answer"]),
                "reply": r["generated_text"] or r["engine_error"] or "",
                "prompt": r["prompt"] or "",
            }
            for r in shown.iter_rows(named=True)
        ],
    )
