"""human-export pages and human-import majority votes, scored by geometry.answers' rules."""

from __future__ import annotations

import base64
import csv
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from geometry.answers import parse_answer, score_answer
from pipelines import cli
from pipelines.noregeo.human import (
    COLUMNS,
    PAGE_SIZE,
    default_key,
    dotted_items,
    normalise,
    question_text,
    read_annotations,
)
from pipelines.noregeo.summarize import load_results


@pytest.fixture(autouse=True)
def _commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "human-export", ("pipelines.noregeo.human_export", "export"))
    monkeypatch.setitem(cli.COMMANDS, "human-import", ("pipelines.noregeo.human_import", "import"))


def _write_csv(
    path: Path, rows: list[tuple[str, str, str]], header=("item_id", "annotator", "answer")
) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _import(annotations: Path, items: Path, out: Path) -> int:
    """`human-import` in-process; its exit code."""
    return cli.main(["human-import", "--annotations", str(annotations), "--items", str(items),
                     "--out", str(out)])  # fmt: skip


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


@pytest.fixture(scope="module")
def exported(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "pages"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(cli.COMMANDS, "human-export", ("pipelines.noregeo.human_export", "export"))
        assert _export(small_items, out) == 0
    return out


def test_export_pages_hold_ten_items_and_no_answers(small_items: Path, exported: Path) -> None:
    dotted = {r["item_id"]: r for r in dotted_items(small_items)}
    pages = sorted(exported.glob("page-*.html"))
    parsed = [_parse(p) for p in pages]
    sizes = [len(p.items) for p in parsed]
    assert all(s == PAGE_SIZE for s in sizes[:-1]) and 1 <= sizes[-1] <= PAGE_SIZE
    entries = [e for p in parsed for e in p.items]
    assert sorted(e["id"] for e in entries) == sorted(dotted)  # every item once
    for entry in entries:
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
    assert [e["id"] for e in entries] != sorted(dotted)
    index = _parse(exported / "index.html")
    assert [link for link in index.links if link.startswith("page-")] == [p.name for p in pages]
    for page in parsed:  # the button writes the header human-import reads
        assert page.button["data-header"] == ",".join(COLUMNS)
        assert "http" not in page.script and "src=" not in page.script  # no network assets


def test_the_key_is_outside_the_pages_and_no_page_holds_an_answer(
    small_items: Path, exported: Path
) -> None:
    dotted = {r["item_id"]: r for r in dotted_items(small_items)}
    key = json.loads(default_key(exported).read_text(encoding="utf-8"))
    assert {i: k["answer"] for i, k in key.items()} == {
        i: json.loads(r["answer"]) for i, r in dotted.items()
    }
    text = "".join(p.read_text(encoding="utf-8") for p in exported.rglob("*") if p.is_file())
    assert '"answer"' not in text and "key" not in {p.stem for p in exported.rglob("*")}
    for row in dotted.values():
        answer = json.loads(row["answer"])
        assert row["answer"] not in text and json.dumps(answer) not in text
        # Numbers with several digits cannot appear by chance in a question or figure text.
        for value in answer.values():
            if not isinstance(value, str) and len(repr(value)) >= 6:
                assert repr(value) not in text, row["item_id"]


def _answers_csv(pages: Path, dotted: dict[str, dict], path: Path) -> Path:
    """The CSV a page's download makes when each field holds the true answer, typed as an
    annotator would (a point as "x, y": a comma inside a field)."""
    rows = []
    for page in sorted(pages.glob("page-*.html")):
        for entry in _parse(page).items:
            truth = json.loads(dotted[entry["id"]]["answer"])
            typed = f"{truth['x']}, {truth['y']}" if "x" in truth else str(truth["answer"])
            rows.append((entry["field"][1], "ann", typed))
    return _write_csv(path, rows)


def test_a_filled_page_imports_as_all_correct(
    small_items: Path, exported: Path, tmp_path: Path
) -> None:
    dotted = {r["item_id"]: r for r in dotted_items(small_items)}
    annotations = _answers_csv(exported, dotted, tmp_path / "ann.csv")
    out = tmp_path / "results"
    argv = ["human-import", "--annotations", str(annotations), "--items", str(small_items)]
    argv += ["--out", str(out)]
    assert cli.main(argv) == 0
    df = load_results(out, model="human")
    assert df.height == len(dotted) and df["correct"].all()


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
global.localStorage = {getItem: () => null, setItem() {}};
global.Blob = function (parts) { saved = parts.join(""); };
global.URL = {createObjectURL: () => "blob:x"};
global.document = {getElementById: id => nodes[id], querySelectorAll: () => fields,
  createElement: () => ({click() {}, remove() {}}), body: {appendChild() {}}};
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
    dotted = {r["item_id"]: r for r in dotted_items(small_items)}
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
        # 2 annotators disagree: a tie, broken by the smallest normalised text.
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

    tie_winner = min(json.dumps({"answer": a}) for a in (right, wrong))
    assert got[choice["item_id"]]["generated_text"] == tie_winner
    assert json.loads(got[choice["item_id"]]["sampling_params"])["tie"] is True
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
    ("header", "item_id"),
    [
        (("item_id", "who", "answer"), None),  # missing column
        (("item_id", "annotator", "answer"), "NOT-AN-ITEM-0000"),  # unknown id
    ],
)
def test_bad_annotations_exit_2_and_write_nothing(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], header, item_id
) -> None:
    first = dotted_items(small_items)[0]["item_id"]
    rows = [(first, "a1", "yes"), (item_id or first, "a2", "no")]
    annotations = _write_csv(tmp_path / "ann.csv", rows, header)
    out = tmp_path / "results"
    assert _import(annotations, small_items, out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1
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
