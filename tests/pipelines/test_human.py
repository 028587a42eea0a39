"""human-export pages as the paper ran its evaluation (every dotted item scored; training,
examination and control items from their own pool; a time limit) and human-import votes
over the annotators who pass the examination and the controls, numeric answers within
+-0.5 agreeing, scored by geometry.answers' rules."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import random
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from geometry.answers import parse_answer, score_answer
from pipelines import cli
from pipelines.human.answers import COLUMNS, normalise, read_annotations
from pipelines.human.items import dotted_items, question_text
from pipelines.human.key import default_key
from pipelines.human.pages import QUALIFICATION_PAGE, TRAINING_PAGE
from pipelines.human.quality import (
    CONTROL,
    PAGE_SIZE,
    QUALIFICATION,
    SCORED,
    TRAINING,
    controls_per_page,
    plan_pages,
)
from pipelines.noregeo.summarize import load_results


@pytest.fixture(autouse=True)
def _commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "human-export", ("pipelines.human.export_command", "export"))
    monkeypatch.setitem(cli.COMMANDS, "human-import", ("pipelines.human.import_command", "import"))


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


@pytest.fixture(scope="module")
def exported(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "pages"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(cli.COMMANDS, "human-export", ("pipelines.human.export_command", "export"))
        assert _export(small_items, out, *EXPORT_OPTIONS) == 0
    return out


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


def test_export_pages_mix_controls_into_every_page(small_items: Path, exported: Path) -> None:
    dotted = {r["item_id"]: r for r in dotted_items(small_items)}
    key = _key(exported)
    roles = {i: k["role"] for i, k in key["items"].items()}
    # The scored items are exactly the models' items; every other role is from the pool,
    # drawn apart (other ids, other questions).
    assert {i for i, r in roles.items() if r == SCORED} == set(dotted)
    pool = {i: k for i, k in key["items"].items() if roles[i] != SCORED}
    assert pool and not set(pool) & set(dotted)
    assert all(i.startswith(k["task"] + "-") and "answer_type" in k for i, k in pool.items())
    pages = sorted(exported.glob("page-*.html"))
    parsed = [_parse(p) for p in pages]
    assert [[e["id"] for e in p.items] for p in parsed] == key["pages"]
    sizes = [len(p.items) for p in parsed]
    assert all(s == PAGE_SIZE for s in sizes[:-1]) and 1 <= sizes[-1] <= PAGE_SIZE
    per_page = controls_per_page(0.2)
    assert key["controls_per_page"] == per_page == 2
    for page in parsed:  # two distinct controls on every page, the last one included
        controls = [e["id"] for e in page.items if roles[e["id"]] == CONTROL]
        assert len(controls) == len(set(controls)) == per_page
    shown = [e["id"] for p in parsed for e in p.items]
    exam = sorted(i for i, r in roles.items() if r == SCORED)
    assert sorted(i for i in shown if roles[i] == SCORED) == exam  # each exam item once
    pool = sorted(i for i, r in roles.items() if r == CONTROL)
    # 500 scored items: 63 pages of 8, their 126 control slots filled once each.
    assert sorted(i for i in shown if roles[i] == CONTROL) == pool and len(pool) == 126
    # Stratified by task: the controls spread over the 25 tasks, 5 or 6 each.
    per_task = {key["items"][i]["task"] for i in pool}
    counts = [sum(key["items"][i]["task"] == task for i in pool) for task in per_task]
    assert len(per_task) == 25 and max(counts) - min(counts) <= 1
    template = (exported / "annotations-template.csv").read_text().splitlines()[1:]
    asked = set(shown) | set(key["qualification"])
    assert sorted(line.split(",")[0] for line in template) == sorted(asked)
    training = _parse(exported / TRAINING_PAGE)
    assert [e["id"] for e in training.items] == key["training"]
    assert len(key["training"]) == PAGE_SIZE and not set(key["training"]) & set(shown)
    exam = _parse(exported / QUALIFICATION_PAGE)
    assert [e["id"] for e in exam.items] == key["qualification"]
    assert {roles[i] for i in key["qualification"]} == {QUALIFICATION}
    assert not set(key["qualification"]) & (set(shown) | set(key["training"]))
    assert len({key["items"][i]["task"] for i in key["qualification"]}) == PAGE_SIZE
    assert key["qualification_pass"] == 0.7 and key["overlap"] == 3
    for entry in [e for p in parsed for e in p.items if e["id"] in dotted]:
        row = dotted[entry["id"]]
        assert entry["src"] == "data:image/png;base64," + base64.b64encode(row["image"]).decode()
        assert entry["question"] == question_text(row)
        assert "Provide your answer as JSON" not in entry["question"]
        if row["answer_type"] == "choice":
            assert entry["field"] == ("select", row["item_id"])
            assert entry["options"] == list(row["options"])
        else:
            assert entry["field"] == ("input", row["item_id"])
    # Shuffled: U-task pairs (yes then no) must not sit next to each other in item order.
    assert [i for i in shown if roles[i] == SCORED] != exam
    index = _parse(exported / "index.html")
    links = [link for link in index.links if link.endswith(".html") and link != "index.html"]
    assert links == [TRAINING_PAGE, QUALIFICATION_PAGE] + [p.name for p in pages]
    for page in parsed:  # the button writes the header human-import reads
        assert page.button["data-header"] == ",".join(COLUMNS)
        assert "http" not in page.script and "src=" not in page.script  # no network assets
    for page in pages:  # the time limit is in every exam page, and in the key
        assert f'<body data-time-limit="{TIME_LIMIT}">' in page.read_text(encoding="utf-8")
    assert key["page_time_limit"] == TIME_LIMIT
    assert "<body>" in (exported / TRAINING_PAGE).read_text(encoding="utf-8")  # no limit


def test_the_key_is_outside_the_pages_and_only_training_answers_are_shown(
    small_items: Path, exported: Path
) -> None:
    dotted = _truths(small_items, exported)
    key = _key(exported)
    assert {i: k["answer"] for i, k in key["items"].items()} == {
        i: json.loads(r["answer"]) for i, r in dotted.items()
    }
    files = [p for p in exported.rglob("*") if p.is_file()]
    text = "".join(p.read_text(encoding="utf-8") for p in files if p.name != TRAINING_PAGE)
    assert '"answer"' not in text and "key" not in {p.stem for p in files}
    assert '"role"' not in text and CONTROL not in text  # nothing marks a control
    for item_id, row in dotted.items():
        if key["items"][item_id]["role"] == TRAINING:
            continue
        answer = json.loads(row["answer"])
        assert row["answer"] not in text and json.dumps(answer) not in text
        # Numbers with several digits cannot appear by chance in a question or figure text.
        for value in answer.values():
            if not isinstance(value, str) and len(repr(value)) >= 6:
                assert repr(value) not in text, row["item_id"]
    training = _parse(exported / TRAINING_PAGE)
    page = (exported / TRAINING_PAGE).read_text(encoding="utf-8")
    for entry in training.items:  # shown behind a click, as an annotator reads it
        truth = json.loads(dotted[entry["id"]]["answer"])
        shown = f"({truth['x']}, {truth['y']})" if "x" in truth else str(truth["answer"])
        assert f"<summary>Show the answer</summary><p>{shown}</p>" in page


def _pool(n: int, tasks: int = 5) -> dict[str, str]:
    return {f"control-{k:04d}": f"T{k % tasks}" for k in range(n)}


@pytest.mark.parametrize("share", [0.0, 0.05, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("qualification", [False, True])
def test_page_plan_roles_and_control_slots(share: float, training: bool, qualification: bool):
    ids = [f"T-{i:04d}" for i in range(95)]
    pool = _pool(2000)
    plan = plan_pages(ids, pool, 3, share, training, qualification)
    per_page = controls_per_page(share)
    assert sorted(i for i, r in plan.roles.items() if r == SCORED) == ids  # none set aside
    assert all(plan.roles[i] == TRAINING for i in plan.training)
    assert all(plan.roles[i] == QUALIFICATION for i in plan.qualification)
    assert len(plan.training) == (PAGE_SIZE if training else 0)
    assert len(plan.qualification) == (PAGE_SIZE if qualification else 0)
    scored = [i for p in plan.pages for i in p if plan.roles[i] == SCORED]
    assert sorted(scored) == ids  # each once
    for page in plan.pages:
        controls = [i for i in page if plan.roles[i] == CONTROL]
        assert len(controls) == len(set(controls)) == per_page
        assert set(controls) <= set(pool)
        assert len(page) <= PAGE_SIZE and len(page) > per_page
        assert {plan.roles[i] for i in page} <= {SCORED, CONTROL}
    controls = [i for p in plan.pages for i in p if plan.roles[i] == CONTROL]
    assert len(controls) == len(set(controls))  # no control shown twice
    tasks = [pool[i] for i in controls]
    if controls:  # stratified: the tasks take turns
        counts = [tasks.count(t) for t in set(tasks)]
        assert max(counts) - min(counts) <= 1
    assert plan_pages(ids, pool, 3, share, training, qualification) == plan  # the seed decides


def test_page_plan_refuses_a_pool_too_small_or_holding_scored_items() -> None:
    from store.errors import UsageError

    ids = [f"T-{i}" for i in range(9)]
    with pytest.raises(UsageError, match="the pages need 101"):
        plan_pages(ids, _pool(28), 0, 0.9, True, True)
    with pytest.raises(UsageError, match="apart from the scored ones"):
        plan_pages(ids, {"T-1": "T"} | _pool(40), 0, 0.2, True, True)


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


def test_a_filled_page_imports_as_all_correct(
    small_items: Path, exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dotted = _truths(small_items, exported)
    annotations = _answers_csv(exported, dotted, tmp_path / "ann.csv")
    out = tmp_path / "results"
    key = default_key(exported)
    assert _import(annotations, small_items, out, "--key", str(key)) == 0
    df = load_results(out, model="human")
    roles = {i: k["role"] for i, k in _key(exported)["items"].items()}
    assert sorted(df["item_id"]) == sorted(i for i, r in roles.items() if r == SCORED)
    assert df["correct"].all()
    printed = capsys.readouterr().out
    assert "ann\t" in printed and "\t1.00\tkept\t10/10" in printed


def _answer(row: dict, right: bool) -> str:
    """The item's answer as an annotator types it, or a wrong one."""
    truth = json.loads(row["answer"])
    if "x" in truth:
        return f"{truth['x'] + (0 if right else 7)}, {truth['y']}"
    value = truth["answer"]
    if isinstance(value, str):
        return value if right else next(o for o in row["options"] if o != value)
    return str(value if right else value + 7)


def test_import_keeps_careful_annotators_excludes_careless_ones_and_reports_ties(
    small_items: Path, exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hand-built annotations on the exported pages, in two files: each passes the
    examination but `unqualified` (7 of 10 is the pass mark: 6 of 10); `careful` gets every
    control right, `borderline` exactly 4 of 5 (the 0.8 default, kept), `careless` 3 of 5
    and `silent` answers no control (both excluded). On the scored items `careless`,
    `silent` and `unqualified` answer wrong where `careful` is right, and `borderline`
    disagrees with `careful` on one item: a tie among the kept votes."""
    dotted = _truths(small_items, exported)
    key = _key(exported)
    roles = {i: k["role"] for i, k in key["items"].items()}
    controls = [i for page in key["pages"] for i in page if roles[i] == CONTROL][:5]
    exam = [i for i in key["pages"][0] if roles[i] == SCORED][:4]
    rows = []
    for who, passed in (("careful", 10), ("borderline", 7), ("careless", 10), ("silent", 10),
                        ("unqualified", 6)):  # fmt: skip
        rows += [(i, who, _answer(dotted[i], n < passed))
                 for n, i in enumerate(key["qualification"])]  # fmt: skip
    for who, right in (("careful", 5), ("borderline", 4), ("careless", 3), ("unqualified", 5)):
        rows += [(i, who, _answer(dotted[i], n < right)) for n, i in enumerate(controls)]
    rows += [(i, "careful", _answer(dotted[i], True)) for i in exam]
    rows += [(i, "careless", _answer(dotted[i], False)) for i in exam]
    rows += [(i, "silent", _answer(dotted[i], False)) for i in exam]
    rows += [(i, "unqualified", _answer(dotted[i], False)) for i in exam]
    rows += [(key["training"][0], "careful", _answer(dotted[key["training"][0]], True))]
    tied = exam[0]
    second = [(tied, "borderline", _answer(dotted[tied], False))]
    first = _write_csv(tmp_path / "first.csv", rows)
    other = _write_csv(tmp_path / "second.csv", second)
    out = tmp_path / "results"
    assert _import([first, other], small_items, out, "--key", str(default_key(exported))) == 0
    printed = capsys.readouterr().out
    table = {line.split("\t")[0]: line.split("\t") for line in printed.splitlines()}
    assert table["careful"][2:] == ["5", "5", "1.00", "kept", "10/10"]
    assert table["borderline"][2:] == ["5", "4", "0.80", "kept", "7/10"]
    assert table["careless"][2:] == ["5", "3", "0.60", "excluded", "10/10"]
    assert table["silent"][2:] == ["0", "0", "n/a", "excluded", "10/10"]
    assert table["unqualified"][2:] == ["5", "5", "1.00", "excluded", "6/10"]
    said = [line for line in printed.splitlines() if "failed the examination" in line]
    assert said == [
        "annotator unqualified failed the examination (6 of 10 right, pass mark 0.7): "
        "excluded from the vote"
    ]
    assert "1 tie(s), " in printed and tied in printed.split("tie(s)")[1]
    assert "overlap (votes per item): 3 item(s) with 1, 1 item(s) with 2" in printed
    assert "1 answer(s) to training items ignored" in printed
    df = load_results(out, model="human")
    got = {r["item_id"]: r for r in df.iter_rows(named=True)}
    assert sorted(got) == sorted(exam)  # controls and training are not in the result
    for item_id in exam[1:]:  # careful alone: the excluded wrong answers did not count
        assert got[item_id]["correct"]
        assert json.loads(got[item_id]["sampling_params"])["annotators"] == 1
    record = json.loads(got[tied]["sampling_params"])
    assert record["tie"] is True and record["annotators"] == 2
    runs = list((out / "noregeo" / "model=human" / "runs").glob("*.json"))
    run = json.loads(runs[0].read_text())
    assert run["annotators"]["careless"]["kept"] is False and run["min_control_accuracy"] == 0.8
    assert run["annotators"]["unqualified"]["failed_exam"] is True
    assert run["overlap"] == {"1": 3, "2": 1}
    # A stricter threshold drops `borderline` too, and with it the tie.
    strict = tmp_path / "strict"
    assert _import([first, other], small_items, strict, "--key", str(default_key(exported)),
                   "--min-control-accuracy", "0.81") == 0  # fmt: skip
    assert "tie" not in capsys.readouterr().out.split("overlap")[1]


def test_import_refuses_one_annotator_answering_an_item_two_ways(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _items_by_type(small_items)["choice"]  # a yes/no item
    same = _write_csv(tmp_path / "a.csv", [(first["item_id"], "a1", "yes")])
    again = _write_csv(tmp_path / "b.csv", [(first["item_id"], "a1", "Yes ")])  # same answer
    out = tmp_path / "results"
    assert _import([same, again], small_items, out) == 0
    df = load_results(out, model="human")
    assert json.loads(df["sampling_params"][0])["annotators"] == 1  # counted once
    other = _write_csv(tmp_path / "c.csv", [(first["item_id"], "a1", "no")])
    out2 = tmp_path / "results2"
    assert _import([same, other], small_items, out2) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a1" in err and str(other) in err
    assert not out2.exists()


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


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_download_button_writes_a_csv_human_import_reads(
    small_items: Path, exported: Path, tmp_path: Path
) -> None:
    page = _parse(exported / "page-001.html")
    script = tmp_path / "page.js"
    script.write_text(page.script, encoding="utf-8")
    driver = tmp_path / "dom.js"
    driver.write_text(NODE_DOM, encoding="utf-8")
    dotted = _truths(small_items, exported)
    typed = {}
    for entry in page.items:  # a comma, a quote and an empty field: CSV quoting matters
        truth = json.loads(dotted[entry["id"]]["answer"])
        typed[entry["id"]] = f"{truth['x']}, {truth['y']}" if "x" in truth else str(truth["answer"])
    skipped = page.items[-1]["id"]
    typed[skipped] = "  "
    env = os.environ | {"BUTTON": json.dumps(page.button)}
    done = subprocess.run(
        ["node", str(driver), str(script), json.dumps(typed)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    csv_path = tmp_path / "download.csv"
    csv_path.write_bytes(done.stdout.encode("utf-8"))
    rows = read_annotations(csv_path)
    assert [r["item_id"] for r in rows] == [e["id"] for e in page.items if e["id"] != skipped]
    assert all(r["annotator"] == "ann 1" and r["answer"] == typed[r["item_id"]] for r in rows)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_index_downloads_every_pages_saved_answers(exported: Path, tmp_path: Path) -> None:
    """Answers are saved per page (a control on two pages must not arrive filled in); the
    index's download collects them page by page."""
    index = _parse(exported / "index.html")
    script = tmp_path / "index.js"
    script.write_text(index.script, encoding="utf-8")
    driver = tmp_path / "dom.js"
    driver.write_text(NODE_DOM, encoding="utf-8")
    key = _key(exported)
    first, second = key["pages"][0][:2], key["pages"][1][:1]
    saved = {f"answer:annotations-page-001:{first[0]}": "yes", f"answer:{first[1]}": "lost",
             f"answer:annotations-page-002:{second[0]}": "3, 4"}  # fmt: skip
    stored = {f"geosee-human:{name}": value for name, value in saved.items()}  # the prefix
    env = os.environ | {"BUTTON": json.dumps(index.button), "STORAGE": json.dumps(stored)}
    done = subprocess.run(
        ["node", str(driver), str(script), "{}"], env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    csv_path = tmp_path / "all.csv"
    csv_path.write_bytes(done.stdout.encode("utf-8"))
    rows = [(r["item_id"], r["answer"]) for r in read_annotations(csv_path)]
    assert rows == [(first[0], "yes"), (second[0], "3, 4")]  # the unkeyed answer is not read


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


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_page_time_limit_locks_the_fields_and_survives_a_reload(
    exported: Path, tmp_path: Path
) -> None:
    script = tmp_path / "page.js"
    script.write_text(_parse(exported / "page-001.html").script, encoding="utf-8")
    driver = tmp_path / "timer.js"
    driver.write_text(TIMER_DOM, encoding="utf-8")
    done = subprocess.run(
        ["node", str(driver), str(script), "60"], capture_output=True, text=True, check=True
    )
    before, after = json.loads(done.stdout)
    assert before == ["0 min 1 s left", [False, False]]
    assert after[0].startswith("Time is up") and after[1] == [True, True]


def test_export_refuses_a_non_empty_out(small_items: Path, tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("keep")
    assert _export(small_items, tmp_path, "--key", str(tmp_path.parent / "k.json")) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
    assert not (tmp_path.parent / "k.json").exists()


@pytest.mark.parametrize("where", ["inside", "exists"])
def test_export_refuses_a_key_inside_the_pages_or_an_existing_one(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    out = tmp_path / "pages"
    key = out / "sub" / "key.json" if where == "inside" else tmp_path / "old.key.json"
    if where == "exists":
        key.write_text("{}")
    assert _export(small_items, out, "--key", str(key)) == 2
    assert "--key" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("typed", "answer_type", "options", "expected"),
    [
        ("yes", "choice", ["yes", "no"], {"answer": "yes"}),
        (" YES ", "choice", ["yes", "no"], {"answer": "yes"}),
        ("abcd", "choice", ["ABCD", "EFGH", "equal"], {"answer": "ABCD"}),
        ("maybe", "choice", ["yes", "no"], None),
        ("12.5", "number", [], {"answer": 12.5}),
        ("12,50", "number", [], {"answer": 12.5}),
        ("+7", "number", [], {"answer": 7}),
        ("1e200", "number", [], None),  # beyond the answers' bound: crashed the import
        ("1e1000000", "number", [], None),  # exponent beyond Decimal's Emax
        ("1e200, 2", "point", [], None),
        ("1e6", "number", [], {"answer": 1000000}),  # the bound itself is a number
        ("twelve", "number", [], None),
        ("(3, -2)", "point", [], {"x": 3, "y": -2}),
        ("3,-2", "point", [], {"x": 3, "y": -2}),
        ("x=3; y=-2.5", "point", [], {"x": 3, "y": -2.5}),
        ("3", "point", [], None),
    ],
)
def test_typed_answers_normalise_to_the_json_format(
    typed: str, answer_type: str, options: list[str], expected: dict | None
) -> None:
    text = normalise(typed, answer_type, options)
    assert (json.loads(text) if text is not None else None) == expected
    if text is not None:  # and the models' parser accepts it
        assert parse_answer(text, answer_type, options).valid


def test_import_majority_vote_tie_and_scoring(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items_by_type(small_items)
    choice, point, number = items["choice"], items["point"], items["number"]
    truth = json.loads(point["answer"])
    x, y = truth["x"], truth["y"]
    wrong = "no" if json.loads(choice["answer"])["answer"] == "yes" else "yes"
    right = json.loads(choice["answer"])["answer"]
    rows = [
        # 3 annotators, two agree on the true point in two typings.
        (point["item_id"], "a1", f"({x}, {y})"),
        (point["item_id"], "a2", f"{x},{y}"),
        (point["item_id"], "a3", f"{x + 5}, {y}"),
        # 2 annotators disagree: a tie, reported and drawn (seeded by the item id).
        (choice["item_id"], "a1", right),
        (choice["item_id"], "a2", wrong),
        # 1 annotator, off by 0.4: right under the +-0.5 rule.
        (number["item_id"], "a1", str(json.loads(number["answer"])["answer"] + 0.4)),
    ]
    annotations = _write_csv(tmp_path / "ann.csv", rows)
    out = tmp_path / "results"
    assert _import(annotations, small_items, out) == 0
    assert choice["item_id"] in capsys.readouterr().out  # the tie is printed
    df = load_results(out, model="human")
    assert df.height == 3 and set(df["setup"]) == {"dotted"} and set(df["model"]) == {"human"}
    got = {r["item_id"]: r for r in df.iter_rows(named=True)}

    tied = sorted(json.dumps({"answer": a}) for a in (right, wrong))
    seed = hashlib.sha256(choice["item_id"].encode()).hexdigest()
    tie_winner = random.Random(seed).choice(tied)
    assert got[choice["item_id"]]["generated_text"] == tie_winner
    record = json.loads(got[choice["item_id"]]["sampling_params"])
    assert record["tie"] is True and record["leaders"] == tied
    point_record = json.loads(got[point["item_id"]]["sampling_params"])
    assert sorted(point_record["votes"].values()) == [1, 2] and point_record["tie"] is False
    assert point_record["annotators"] == 3
    assert json.loads(got[point["item_id"]]["generated_text"]) == {"x": x, "y": y}
    for item in (choice, point, number):
        row = got[item["item_id"]]
        parsed = parse_answer(row["generated_text"], item["answer_type"], item["options"])
        expected = score_answer(parsed, item["answer"], item["answer_type"])
        assert row["correct"] == expected.correct
        assert row["valid"] == parsed.valid
    assert got[point["item_id"]]["correct"] and got[number["item_id"]]["correct"]
    assert got[choice["item_id"]]["correct"] == (tie_winner == json.dumps({"answer": right}))


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("missing-column", "lacks column"),
        ("unknown-id", "NOT-AN-ITEM-0000"),
        ("unknown-id-second-file", "NOT-AN-ITEM-0000"),
        ("no-annotator", "has no annotator"),
        ("key-of-another-item-table", "belongs to another item table"),
        ("key-without-roles", "not a human-export key"),
        ("everyone-excluded", "no scored answers left to vote"),
    ],
)
def test_bad_annotations_exit_2_and_write_nothing(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case, needle
) -> None:
    first = dotted_items(small_items)[0]["item_id"]
    header = ("item_id", "who", "answer") if case == "missing-column" else COLUMNS
    rows = [(first, "a1", "yes"), (first, "" if case == "no-annotator" else "a2", "no")]
    if case == "unknown-id":
        rows.append(("NOT-AN-ITEM-0000", "a2", "no"))
    files = [_write_csv(tmp_path / "ann.csv", rows, header)]
    if case == "unknown-id-second-file":
        files.append(_write_csv(tmp_path / "more.csv", [("NOT-AN-ITEM-0000", "a3", "no")]))
    extra: list[str] = []
    key = tmp_path / "k.json"
    if case == "key-of-another-item-table":
        key.write_text(json.dumps({"items": {"NOT-AN-ITEM-0000": {"role": "control"}}}))
    elif case == "key-without-roles":
        key.write_text(json.dumps({"items": {first: {"answer": "yes"}}}))
    elif case == "everyone-excluded":  # the only item is a control both got wrong
        key.write_text(json.dumps({"items": {first: {"role": "control"}}}))
        files = [_write_csv(tmp_path / "ann.csv", [(first, "a1", "maybe"), (first, "a2", "x")])]
    if key.exists():
        extra = ["--key", str(key)]
    out = tmp_path / "results"
    assert _import(files, small_items, out, *extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1 and needle in err, err
    assert not out.exists()


def test_human_rows_load_beside_models(small_items: Path, tmp_path: Path) -> None:
    first = dotted_items(small_items)[0]
    annotations = _write_csv(tmp_path / "ann.csv", [(first["item_id"], "a1", "no")])
    out = tmp_path / "results"
    assert _import(annotations, small_items, out) == 0
    df = load_results(out)
    assert df.filter(pl.col("model") == "human").height == 1


def test_typed_huge_numbers_import_as_invalid_votes(small_items: Path, tmp_path: Path) -> None:
    """A typed 1e200 crashed human-import with OverflowError; now it is an invalid answer."""
    number = _items_by_type(small_items)["number"]
    point = _items_by_type(small_items)["point"]
    rows = [(number["item_id"], "a1", "1e200"), (point["item_id"], "a1", "1e300, 1")]
    annotations = _write_csv(tmp_path / "ann.csv", rows)
    out = tmp_path / "results"
    assert _import(annotations, small_items, out) == 0
    df = load_results(out, model="human")
    assert df.height == 2
    assert df["valid"].to_list() == [False, False] and not df["correct"].any()
    assert df["sq_error"].null_count() == 2


def test_numeric_votes_within_half_agree_and_a_real_tie_is_reported(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three annotators type 10, 10.4 and 15 for a number: 10 and 10.4 agree under the
    +-0.5 rule (by exact text they would be a three-way tie), and the vote is their median;
    the same for a point per coordinate. Two who answer 3 apart are a tie, reported."""
    items = _items_by_type(small_items)
    number, point = items["number"], items["point"]
    others = [r for r in dotted_items(small_items) if r["answer_type"] == "number"]
    tied = next(r for r in others if r["item_id"] != number["item_id"])
    rows = [
        (number["item_id"], "a1", "10"),
        (number["item_id"], "a2", "10.4"),
        (number["item_id"], "a3", "15"),
        (point["item_id"], "a1", "(1, 2)"),
        (point["item_id"], "a2", "(1.5, 2.5)"),
        (point["item_id"], "a3", "(1.2, 9)"),
        (tied["item_id"], "a1", "4"),
        (tied["item_id"], "a2", "7"),
    ]
    out = tmp_path / "results"
    assert _import(_write_csv(tmp_path / "ann.csv", rows), small_items, out) == 0
    printed = capsys.readouterr().out
    got = {r["item_id"]: r for r in load_results(out, model="human").iter_rows(named=True)}
    numeric = json.loads(got[number["item_id"]]["sampling_params"])
    assert numeric["tie"] is False and json.loads(got[number["item_id"]]["generated_text"]) == {
        "answer": 10.2
    }
    # (1, 2) and (1.5, 2.5) agree; (1.2, 9) agrees with neither: the median of the two.
    assert json.loads(got[point["item_id"]]["generated_text"]) == {"x": 1.25, "y": 2.25}
    assert json.loads(got[point["item_id"]]["sampling_params"])["tie"] is False
    record = json.loads(got[tied["item_id"]]["sampling_params"])
    assert record["tie"] is True and sorted(record["leaders"]) == ['{"answer": 4}', '{"answer": 7}']
    assert "1 tie(s), " in printed and tied["item_id"] in printed.split("tie(s)")[1]
