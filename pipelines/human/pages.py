"""Static HTML pages for human annotators: no server, no network assets, no answers.

Each page holds up to 10 items: the figure (embedded as a PNG data URL, so one page file is
all an annotator needs), the question, and an answer field named by the item id: a
<select> of the options for a choice, a text <input> for a number or a point (typed as the
annotator likes; human-import normalises "12,5" or "(3, -2)"). A "Download CSV" button
builds `item_id,annotator,answer` rows (the header human-import reads, carried in the
button's `data-header`) from the filled fields, with inline JavaScript. Answers and the
annotator's name are also kept in the browser's localStorage, so a reload loses nothing
and, where the browser shares it between local files (Chrome does), the index page can
download every page's answers as one CSV.

A page may carry a time limit (`data-time-limit` seconds on its <body>): the script counts
down from the page's first opening (kept in localStorage, so a reload does not restart the
clock) and locks the fields when the time is up; what was answered can still be
downloaded. The training page (`training.html`) shows each item's answer under it, behind
a click; the examination page (`qualification.html`) says its pass mark: an annotator's other
pages count only if they pass it.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import Any

# The script every page and the index share. Fields are the elements with data-item;
# the CSV header comes from the button's data-header (written from human.COLUMNS).
_SCRIPT = """
(function () {
  "use strict";
  var PREFIX = "geosee-human:";
  function load(key) {
    try { return localStorage.getItem(PREFIX + key); } catch (e) { return null; }
  }
  function save(key, value) {
    try { localStorage.setItem(PREFIX + key, value); } catch (e) {}
  }
  function cell(text) {
    return /[",\\r\\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  var who = document.getElementById("annotator");
  var button = document.getElementById("download");
  var status = document.getElementById("status");
  var fields = Array.prototype.slice.call(document.querySelectorAll("[data-item]"));
  var ids = (button.getAttribute("data-items") || "").split(" ").filter(Boolean);
  // Answers are kept per page: an item shown on two pages must not arrive filled in.
  var page = button.getAttribute("data-file");
  var limit = Number(document.body.getAttribute("data-time-limit") || 0);
  if (limit > 0) {
    var clock = document.getElementById("timer");
    var startKey = "start:" + button.getAttribute("data-file");
    var start = Number(load(startKey) || Date.now());
    save(startKey, String(start));
    var tick = function () {
      var left = Math.ceil(limit - (Date.now() - start) / 1000);
      if (left > 0) {
        clock.textContent = Math.floor(left / 60) + " min " + (left % 60) + " s left";
        return;
      }
      clock.textContent = "Time is up: the fields are locked; download what you answered.";
      fields.forEach(function (f) { f.disabled = true; });
      clearInterval(timer);
    };
    var timer = setInterval(tick, 1000);
    tick();
  }
  who.value = load("annotator") || "";
  who.addEventListener("change", function () { save("annotator", who.value.trim()); });
  fields.forEach(function (field) {
    var kept = load("answer:" + page + ":" + field.name);
    if (kept !== null) { field.value = kept; }
    field.addEventListener("change", function () {
      save("answer:" + page + ":" + field.name, field.value);
    });
  });
  button.addEventListener("click", function () {
    var name = who.value.trim();
    if (!name) { status.textContent = "Enter your name or initials first."; who.focus(); return; }
    var answers = fields.length
      ? fields.map(function (f) { return [f.name, f.value]; })
      : ids.map(function (entry) {  // "page:item" on the index
        return [entry.split(":")[1], load("answer:" + entry) || ""];
      });
    var lines = [button.getAttribute("data-header")];
    answers.forEach(function (pair) {
      var answer = pair[1].trim();
      if (answer) { lines.push([pair[0], name, answer].map(cell).join(",")); }
    });
    if (lines.length === 1) { status.textContent = "No answers to download here."; return; }
    var link = document.createElement("a");
    var csv = new Blob([lines.join("\\r\\n") + "\\r\\n"], {type: "text/csv"});
    link.href = URL.createObjectURL(csv);
    var who_file = name.replace(/[^A-Za-z0-9_-]+/g, "_");
    link.download = button.getAttribute("data-file") + "-" + who_file + ".csv";
    document.body.appendChild(link);
    link.click();
    link.remove();
    status.textContent = (lines.length - 1) + " answer(s) saved as " + link.download + ".";
  });
})();
"""

_STYLE = """
body { font-family: sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
section { border-top: 1px solid #ccc; padding: 1rem 0; }
img { max-width: 100%; image-rendering: pixelated; border: 1px solid #ddd; }
.question { white-space: pre-wrap; }
label { display: block; margin: .5rem 0; }
small { color: #666; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


TRAINING_PAGE = "training.html"
QUALIFICATION_PAGE = "qualification.html"


def page_name(number: int) -> str:
    """The file name of page `number` (1-based; 0 is the training page, -1 the
    examination page)."""
    if number == -1:
        return QUALIFICATION_PAGE
    return TRAINING_PAGE if number == 0 else f"page-{number:03d}.html"


def _document(title: str, body: str, time_limit: int | None = None) -> str:
    limit = f' data-time-limit="{time_limit}"' if time_limit else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_e(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f"<body{limit}>\n{body}\n<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def _page_file(number: int) -> str:
    """A page's name in its CSV file name and its saved answers' keys."""
    return "annotations-qualification" if number == -1 else f"annotations-page-{number:03d}"


def _minutes(seconds: int) -> str:
    whole, rest = divmod(seconds, 60)
    return f"{whole} min" + (f" {rest} s" if rest else "")


def _download(header: str, file: str, ids: Sequence[str] = ()) -> str:
    return (
        '<p><label>Your name or initials: <input id="annotator" autocomplete="name"></label></p>\n'
        f'<p><button type="button" id="download" data-header="{_e(header)}" '
        f'data-file="{_e(file)}" data-items="{_e(" ".join(ids))}">Download CSV</button> '
        '<span id="status" role="status"></span></p>'
    )


def _field(item: dict[str, Any], hint: str) -> str:
    """The answer field of one item, named by its id."""
    item_id = _e(item["item_id"])
    if item["answer_type"] == "choice":
        options = "".join(f"<option>{_e(o)}</option>" for o in item["options"] or [])
        control = f'<select name="{item_id}" data-item><option value=""></option>{options}</select>'
    else:
        control = f'<input type="text" name="{item_id}" data-item autocomplete="off">'
    return f"<label>Answer ({_e(hint)}): {control}</label>"


def render_page(
    number: int,
    total: int,
    items: Sequence[dict[str, Any]],
    header: str,
    hints: dict[str, str],
    time_limit: int | None = None,
    pass_mark: float | None = None,
) -> str:
    """One page (number 0: the training page, -1: the examination page, whose `pass_mark`
    it states): each item's figure, question and answer field, and the CSV download.
    `items` carry item_id, question, answer_type, options and image (PNG bytes), and on the
    training page shown_answer."""
    sections = []
    for item in items:
        image = base64.b64encode(item["image"]).decode("ascii")
        shown = item.get("shown_answer")
        reveal = (
            f"\n<details><summary>Show the answer</summary><p>{_e(shown)}</p></details>"
            if shown is not None
            else ""
        )
        sections.append(
            f'<section id="{_e(item["item_id"])}">\n'
            f"<h2>{_e(item['item_id'])}</h2>\n"
            f'<img src="data:image/png;base64,{image}" alt="figure of {_e(item["item_id"])}">\n'
            f'<p class="question">{_e(item["question"])}</p>\n'
            f"{_field(item, hints[item['answer_type']])}{reveal}\n</section>"
        )
    nav = ['<a href="index.html">all pages</a>']
    if number > 1:
        nav.append(f'<a href="{page_name(number - 1)}">previous</a>')
    if 0 <= number < total:
        nav.append(f'<a href="{page_name(number + 1)}">next</a>')
    if number == 0:
        title = "Training page (not scored): answer, then compare with the answer shown"
    elif number == -1:
        title = (
            f"Examination: your other pages count only if you answer at least "
            f"{pass_mark or 0:.0%} of these right"
        )
    else:
        title = f"Page {number} of {total}"
    limit = (
        f"<p>Time limit: {_minutes(time_limit)} from when you first open this page; the "
        'fields lock when it runs out. <strong id="timer"></strong></p>\n'
        if time_limit
        else ""
    )
    body = (
        f"<h1>{_e(title)}</h1>\n<nav>{' · '.join(nav)}</nav>\n{limit}"
        f"{_download(header, _page_file(number))}\n"
        + "\n".join(sections)
        + "\n<p>Answer what you can; fields left empty are not in the CSV.</p>"
    )
    return _document(f"Human evaluation: {title}", body, time_limit)


def render_index(
    pages: Sequence[Sequence[str]],
    header: str,
    training: bool = False,
    time_limit: int | None = None,
    qualification: bool = False,
    overlap: int | None = None,
) -> str:
    """The index: the training and examination pages when there are, a link per page
    (with its item count), how many annotators each page is for, and the all-pages
    download."""
    links = "\n".join(
        f'<li><a href="{page_name(n)}">Page {n}</a> <small>({len(ids)} items)</small></li>'
        for n, ids in enumerate(pages, start=1)
    )
    first = (
        f'<p>Start with the <a href="{TRAINING_PAGE}">training page</a>: its answers are '
        "shown, so you can check how the questions are meant.</p>\n"
        if training
        else ""
    )
    if qualification:
        first += (
            f'<p>Then take the <a href="{QUALIFICATION_PAGE}">examination</a>: your other '
            "pages count only if you pass it.</p>\n"
        )
    limit = f"<p>Each page has a time limit of {_minutes(time_limit)}.</p>\n" if time_limit else ""
    if overlap:
        limit += f"<p>Each page is to be answered by {overlap} different annotators.</p>\n"
    every = [f"{_page_file(n)}:{i}" for n, ids in enumerate(pages, start=1) for i in ids]
    body = (
        "<h1>Human evaluation</h1>\n"
        "<p>Each page shows figures with a question; answer in the field below each one "
        "(a number as e.g. 12.5, a point as x, y). Then press <em>Download CSV</em> on the "
        "page and send the file(s) back. Your answers stay in this browser between visits.</p>"
        f"\n{first}{limit}<ol>\n{links}\n</ol>\n"
        "<p>All pages at once (works where the browser shares saved answers between local "
        "files; otherwise download on each page):</p>\n"
        f"{_download(header, 'annotations-all', every)}"
    )
    return _document("Human evaluation", body)
