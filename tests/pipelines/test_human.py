"""human-export pages and human-import majority votes, scored by geometry.answers' rules."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest

from geometry.answers import parse_answer, score_answer
from pipelines import cli
from pipelines.noregeo.human import PAGE_SIZE, dotted_items, normalise
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


def test_export_pages_hold_ten_items_and_no_answers(small_items: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    assert cli.main(["human-export", str(small_items), "--out", str(out)]) == 0
    dotted = {r["item_id"]: r for r in dotted_items(small_items)}
    pages = sorted((out / "pages").glob("page-*.json"))
    entries = [e for p in pages for e in json.loads(p.read_text())["items"]]
    sizes = [len(json.loads(p.read_text())["items"]) for p in pages]
    assert all(s == PAGE_SIZE for s in sizes[:-1]) and 1 <= sizes[-1] <= PAGE_SIZE
    assert sorted(e["item_id"] for e in entries) == sorted(dotted)
    for entry in entries:
        assert "answer" not in entry
        assert "Provide your answer as JSON" not in entry["question"]
        assert (out / entry["image"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The answers live only in the key file, equal to the item table's.
    key = json.loads((out / "key.json").read_text())
    assert {i: k["answer"] for i, k in key.items()} == {
        i: json.loads(r["answer"]) for i, r in dotted.items()
    }
    # Shuffled: U-task pairs (yes then no) must not sit next to each other in item order.
    assert [e["item_id"] for e in entries] != sorted(dotted)


def test_export_refuses_a_non_empty_out(small_items: Path, tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("keep")
    assert cli.main(["human-export", str(small_items), "--out", str(tmp_path)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


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
