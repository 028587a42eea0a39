"""Helpers of the human-evaluation tests (test_export.py, test_import.py): the commands run
in-process, annotation files written, the exported pages parsed."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path

from pipelines import cli
from pipelines.human.items import dotted_items
from pipelines.human.key import default_key
from pipelines.human.pages import QUALIFICATION_PAGE


def _write_csv(
    path: Path, rows: list[tuple[str, str, str]], header=("item_id", "annotator", "answer")
) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _import(annotations: Path | list[Path], items: Path, out: Path, *extra: str) -> int:
    """`human-import` in-process; its exit code."""
    files = [str(a) for a in (annotations if isinstance(annotations, list) else [annotations])]
    return cli.main(["human-import", "--annotations", *files, "--items", str(items),
                     "--out", str(out), *extra])  # fmt: skip


def _items_by_type(small_items: Path) -> dict[str, dict]:
    """The first dotted item of each answer type (a yes/no one for choice)."""
    first: dict[str, dict] = {}
    for row in dotted_items(small_items):
        if row["answer_type"] != "choice" or list(row["options"]) == ["yes", "no"]:
            first.setdefault(row["answer_type"], row)
    return first


class PageParser(HTMLParser):
    """What an annotator's browser sees of a page: items (figure, question, field), links,
    the download button's attributes and the script."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[dict] = []
        self.links: list[str] = []
        self.button: dict[str, str | None] = {}
        self.script = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.items.append({"id": a["id"], "question": "", "options": [], "field": None})
        elif tag == "img" and self.items:
            self.items[-1]["src"] = a["src"]
        elif tag in ("select", "input") and "data-item" in a:
            self.items[-1]["field"] = (tag, a["name"])
        elif tag == "a":
            self.links.append(a["href"] or "")
        elif tag == "button":
            self.button = a
        self._in = a.get("class") if tag == "p" else tag

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "question":
            self.items[-1]["question"] += data
        elif self._in == "option" and data:
            self.items[-1]["options"].append(data)
        elif self._in == "script":
            self.script += data


def _parse(path: Path) -> PageParser:
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def _export(small_items: Path, out: Path, *extra: str) -> int:
    return cli.main(["human-export", "--items", str(small_items), "--out", str(out), *extra])


TIME_LIMIT = 600

EXPORT_OPTIONS = ("--control-share", "0.2", "--training-page", "--page-time-limit", str(TIME_LIMIT))


def _key(exported: Path) -> dict:
    return json.loads(default_key(exported).read_text(encoding="utf-8"))


def _truths(small_items: Path, exported: Path) -> dict[str, dict]:
    """Every item an annotator may see, as rows with answer (JSON text) and options: the
    scored ones from --items, the pool's from the key."""
    rows = {r["item_id"]: r for r in dotted_items(small_items)}
    for item_id, entry in _key(exported)["items"].items():
        if item_id not in rows:
            rows[item_id] = entry | {"item_id": item_id, "answer": json.dumps(entry["answer"])}
    return rows


def _pool(n: int, tasks: int = 5) -> dict[str, str]:
    return {f"control-{k:04d}": f"T{k % tasks}" for k in range(n)}


def _answers_csv(pages: Path, dotted: dict[str, dict], path: Path) -> Path:
    """The CSV a page's download makes when each field holds the true answer, typed as an
    annotator would (a point as "x, y": a comma inside a field), the examination's too."""
    rows = []
    for page in [pages / QUALIFICATION_PAGE, *sorted(pages.glob("page-*.html"))]:
        for entry in _parse(page).items:
            truth = json.loads(dotted[entry["id"]]["answer"])
            typed = f"{truth['x']}, {truth['y']}" if "x" in truth else str(truth["answer"])
            rows.append((entry["field"][1], "ann", typed))
    return _write_csv(path, rows)


def _answer(row: dict, right: bool) -> str:
    """The item's answer as an annotator types it, or a wrong one."""
    truth = json.loads(row["answer"])
    if "x" in truth:
        return f"{truth['x'] + (0 if right else 7)}, {truth['y']}"
    value = truth["answer"]
    if isinstance(value, str):
        return value if right else next(o for o in row["options"] if o != value)
    return str(value if right else value + 7)


NODE_DOM = """
const fs = require("fs");
const [script, answersJson] = process.argv.slice(2);
const answers = JSON.parse(answersJson);
const fields = Object.keys(answers).map(name => ({name, value: answers[name],
  addEventListener() {}}));
const attrs = JSON.parse(process.env.BUTTON);
let click = null, saved = null;
const el = id => ({value: "", focus() {}, textContent: "", addEventListener(t, f) {
  if (id === "download") click = f; }, getAttribute: n => (n in attrs ? attrs[n] : null)});
const nodes = {annotator: el("annotator"), download: el("download"), status: el("status")};
const stored = JSON.parse(process.env.STORAGE || "{}");
global.localStorage = {getItem: k => (k in stored ? stored[k] : null), setItem() {}};
global.Blob = function (parts) { saved = parts.join(""); };
global.URL = {createObjectURL: () => "blob:x"};
global.document = {getElementById: id => nodes[id], querySelectorAll: () => fields,
  createElement: () => ({click() {}, remove() {}}),
  body: {appendChild() {}, getAttribute: () => null}};
eval(fs.readFileSync(script, "utf8"));
nodes.annotator.value = "ann 1";  // typed after the page loaded
click();
process.stdout.write(saved);
"""

TIMER_DOM = """
const fs = require("fs");
const [script, limit] = process.argv.slice(2);
let now = 1000000, ticks = [], stored = {};
Date.now = () => now;
global.setInterval = f => { ticks.push(f); return 1; };
global.clearInterval = () => {};
const fields = [{name: "A", value: "", addEventListener() {}},
                {name: "B", value: "", addEventListener() {}}];
const el = () => ({value: "", textContent: "", addEventListener() {}, getAttribute: () => "p1"});
const nodes = {annotator: el(), download: el(), status: el(), timer: el()};
global.localStorage = {getItem: k => (k in stored ? stored[k] : null),
                       setItem: (k, v) => { stored[k] = v; }};
global.document = {getElementById: id => nodes[id], querySelectorAll: () => fields,
  body: {getAttribute: n => (n === "data-time-limit" ? limit : null)}};
const run = () => eval(fs.readFileSync(script, "utf8"));
run();
const states = [];
const step = seconds => { now += seconds * 1000; ticks.forEach(f => f());
  states.push([nodes.timer.textContent, fields.map(f => !!f.disabled)]); };
step(59);   // 1 s before a 60 s limit
run();      // a reload: the clock keeps the first opening, it does not restart
step(1);    // the limit
process.stdout.write(JSON.stringify(states));
"""
