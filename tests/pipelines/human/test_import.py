"""human-import: votes over the annotators who pass the examination and the controls
(pages exported as the paper ran its evaluation: test_export.py), numeric answers within
+-0.5 agreeing, scored by geometry.answers' rules."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import polars as pl
import pytest

from geometry.answers import parse_answer, score_answer
from pipelines.human.answers import COLUMNS, normalise
from pipelines.human.items import dotted_items
from pipelines.human.key import default_key
from pipelines.human.quality import (
    CONTROL,
    SCORED,
)
from pipelines.noregeo.summarize import load_results
from tests.pipelines.human.human_support import (
    _answer,
    _answers_csv,
    _import,
    _items_by_type,
    _key,
    _truths,
    _write_csv,
)


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
