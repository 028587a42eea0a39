"""geobuild-summarize's two verdicts, two denominators and self-correction tables, each
recomputed here in plain Python from the same hand-built rows; each verdict reported only
for runs that stopped on it (the run's protocol)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from geometry.dsl.public_categories import PUBLIC_KIND
from pipelines.geobuild.results_json import write_results_json
from pipelines.geobuild.rows import ADDED_LATER, RoundWriter, read_round
from pipelines.geobuild.summarize import FAILED_VALIDATION, SUCCESS, summary_tables
from store.records import write_run_record
from store.settings import write_settings

BROKEN = "angle_value: reflex 200° read as 160°"


def _row(pid: str, k: int, category: str | None, obj: float, cond: float, **extra: object):
    success = category is None and obj == 1.0 and cond == 1.0
    return {
        "problem_id": pid,
        "round": k,
        "error_category": category,
        "object_score": obj,
        "condition_score": cond,
        "success": success,
        "success_public": category is None and obj >= 0.9 and cond >= 0.9,
        "error_category_public": None if category is None else PUBLIC_KIND[category],
        "data_errors": "",
        "verdict": json.dumps({"missing_objects": [], "failed_conditions": []}),
        **extra,
    }


# Model a (3 rounds): p1 fixed in round 3; p2 solved in round 1; p3 public success only,
# in round 3; p4 errors every round (its round-1 scores would pass, the error blocks them).
ROWS_A = [
    _row("p1", 1, "syntax", 0.0, 0.0),
    _row("p1", 2, None, 1.0, 0.5),
    _row("p1", 3, None, 1.0, 1.0),
    _row("p2", 1, None, 1.0, 1.0),
    _row("p3", 1, "geometric", 0.5, 0.5),
    _row("p3", 2, "geometric", 0.5, 0.5),
    _row("p3", 3, None, 1.0, 0.95),
    _row("p4", 1, "undefined_label", 1.0, 1.0),
    _row("p4", 2, "no_program", 0.0, 0.0),
    _row("p4", 3, "engine_error", 0.0, 0.0),
]
# Model b (2 rounds): q1 broken data, solved; q2 clean, never solved; q3 broken, errors;
# q4 attempted, no row.
ROWS_B = [
    _row("q1", 1, None, 1.0, 1.0, data_errors=BROKEN),
    _row("q2", 1, None, 1.0, 0.5),
    _row("q2", 2, None, 0.5, 0.5),
    _row("q3", 1, "syntax", 0.0, 0.0, data_errors=BROKEN),
    _row("q3", 2, "syntax", 0.0, 0.0, data_errors=BROKEN),
]
MODELS = {"a": (ROWS_A, ["p1", "p2", "p3", "p4"], 3), "b": (ROWS_B, ["q1", "q2", "q3", "q4"], 2)}


def write_results(tmp_path: Path, protocols: dict[str, str] | None = None) -> Path:
    """MODELS' rows and run records under `tmp_path`/geobuild, each model's run of the
    protocol `protocols` names (geosee: none recorded, as our loop writes it); returns
    `tmp_path`."""
    for model, (rows, ids, rounds) in MODELS.items():
        root = tmp_path / "geobuild" / f"model={model}"
        protocol = (protocols or {}).get(model, "geosee")
        if protocol != "geosee":
            write_settings(root, {"protocol": protocol})
        problems = [{"id": i, "category": "c", "difficulty": 1} for i in ids]
        write_run_record(
            root, {"benchmark": "geobuild", "problems": problems, "max_rounds": rounds}
        )
        for k in sorted({r["round"] for r in rows}):
            part = [
                {**r, "request_key": f"{model}{r['problem_id']}{k}"}
                for r in rows
                if r["round"] == k
            ]
            batch = {c: np.array([r[c] for r in part], dtype=object) for c in part[0]}
            batch["sampling_params"] = np.array([{}] * len(part), dtype=object)
            RoundWriter(str(root / f"round={k}"), {"model": model})(batch)
    return tmp_path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path)


PROTOCOLS = ("geosee", "public")
# The columns of each rule in the overall table and the _expected key of each.
RULE_COLUMNS = {
    "geosee": {"success_rate_all": "success_all", "success_rate_clean": "success_clean"},
    "public": {
        "public_success_rate_all": "public_all",
        "public_success_rate_clean": "public_clean",
    },
}


def _expected(model: str) -> dict[str, Any]:
    """The metrics of one model, recomputed from its rows with plain Python."""
    rows, ids, max_rounds = MODELS[model]
    by_problem = {
        i: sorted((r for r in rows if r["problem_id"] == i), key=lambda r: r["round"]) for i in ids
    }
    broken = {i for i, rs in by_problem.items() if any(r["data_errors"] for r in rs)}
    clean = [i for i in ids if i not in broken]

    def first(i: str, key: str) -> int | None:
        return next((r["round"] for r in by_problem[i] if r[key]), None)

    solved_at = {i: first(i, "success") for i in ids}
    public_at = {i: first(i, "success_public") for i in ids}
    rate = lambda at, pool: sum(at[i] is not None for i in pool) / len(pool)  # noqa: E731
    round1 = {i: rs[0] for i, rs in by_problem.items() if rs and rs[0]["round"] == 1}
    failed1 = [i for i, r in round1.items() if not r["success"]]
    failed1_public = [i for i, r in round1.items() if not r["success_public"]]

    def kind(r: dict) -> str:
        return SUCCESS if r["success"] else r["error_category"] or FAILED_VALIDATION

    transitions: dict[tuple[str, str], int] = {}
    for rs in by_problem.values():
        for before, after in zip(rs, rs[1:], strict=False):
            assert after["round"] == before["round"] + 1
            pair = (kind(before), kind(after))
            transitions[pair] = transitions.get(pair, 0) + 1
    return {
        "success_all": rate(solved_at, ids),
        "success_clean": rate(solved_at, clean),
        "public_all": rate(public_at, ids),
        "public_clean": rate(public_at, clean),
        "broken": len(broken),
        "by_round": [
            (
                k,
                sum(v is not None and v <= k for v in solved_at.values()),
                sum(v is not None and v <= k for v in public_at.values()),
            )
            for k in range(1, max_rounds + 1)
        ],  # fmt: skip
        "fixed": (len(failed1), sum(solved_at[i] is not None for i in failed1)),
        "fixed_public": (
            len(failed1_public),
            sum(public_at[i] is not None for i in failed1_public),
        ),
        "transitions": transitions,
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", list(MODELS))
def test_each_verdict_over_both_denominators_only_from_runs_that_stop_on_it(
    tmp_path: Path, model: str, protocol: str
) -> None:
    results = write_results(tmp_path, {m: protocol for m in MODELS})
    want = _expected(model)
    overall = summary_tables(results)["overall"].filter(model=model).row(0, named=True)
    assert overall["protocol"] == protocol
    assert overall["problems"] == len(MODELS[model][1])
    assert overall["broken_data"] == want["broken"]
    for column, key in RULE_COLUMNS[protocol].items():
        assert overall[column] == pytest.approx(want[key]), column
    other = next(p for p in PROTOCOLS if p != protocol)
    for column in RULE_COLUMNS[other]:  # the other rule's stop would bias it: not reported
        assert overall[column] is None, column


def test_a_public_runs_reported_success_stops_on_the_public_verdict(tmp_path: Path) -> None:
    """Model a's rows read as a public-protocol run: each problem's success and its round to
    success are the first public pass (p3 passes the public rule only, at round 3), and our
    rule's numbers, which that run never stopped on, are left out."""
    results = write_results(tmp_path, {"a": "public"})
    tables = summary_tables(results)
    overall = {r["model"]: r for r in tables["overall"].iter_rows(named=True)}
    public, geosee = overall["a"], overall["b"]
    first_public = {"p1": 3, "p2": 1, "p3": 3}  # p4 never passes; recomputed from ROWS_A
    assert (public["protocol"], public["solved_public"], public["solved"]) == ("public", 3, None)
    assert public["mean_rounds_to_success"] == pytest.approx(sum(first_public.values()) / 3)
    assert (geosee["protocol"], geosee["solved"], geosee["solved_public"]) == ("geosee", 1, None)
    by_round = tables["success_by_round"].filter(model="a")
    assert by_round["solved_by_round"].null_count() == by_round.height
    assert by_round["solved_public_by_round"].to_list() == [1, 1, 3]


def test_a_one_round_run_reports_both_rules(tmp_path: Path) -> None:
    """Nothing was stopped early in a run of one round (the solver's upper bound)."""
    results = tmp_path
    root = results / "geobuild" / "model=s"
    write_run_record(root, {"benchmark": "geobuild", "problems": [{"id": "p3"}], "max_rounds": 1})
    row = {**_row("p3", 1, None, 1.0, 0.95), "request_key": "k"}
    batch = {c: np.array([row[c]], dtype=object) for c in row}
    batch["sampling_params"] = np.array([{}], dtype=object)
    RoundWriter(str(root / "round=1"), {"model": "s"})(batch)
    overall = summary_tables(results)["overall"].row(0, named=True)
    assert (overall["solved"], overall["solved_public"]) == (0, 1)


def test_the_denominators_and_verdicts_differ_where_the_rows_say_so(tmp_path: Path) -> None:
    def overall(protocol: str) -> dict[str, dict]:
        results = write_results(tmp_path / protocol, {m: protocol for m in MODELS})
        return {r["model"]: r for r in summary_tables(results)["overall"].iter_rows(named=True)}

    # a: p3 passes the public rule only; an error blocks p4's passing scores.
    assert overall("geosee")["a"]["solved"] == 2 and overall("public")["a"]["solved_public"] == 3
    # b: q1 (solved) and q3 are broken: clean data leaves q2 and q4, neither solved.
    b = overall("geosee")["b"]
    assert b["success_rate_all"] == pytest.approx(1 / 4)
    assert b["success_rate_clean"] == 0.0


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", list(MODELS))
def test_success_by_round_and_fixes(tmp_path: Path, model: str, protocol: str) -> None:
    want = _expected(model)
    tables = summary_tables(write_results(tmp_path, {m: protocol for m in MODELS}))
    by_round = tables["success_by_round"].filter(model=model)
    column, index = (
        ("solved_by_round", 1) if protocol == "geosee" else ("solved_public_by_round", 2)
    )
    got = list(by_round.select("round", column).iter_rows())
    assert got == [(r[0], r[index]) for r in want["by_round"]]
    fixes = tables["feedback_fixes"].filter(model=model).row(0, named=True)
    ours = (fixes["first_round_failures"], fixes["fixed_later"])
    public = (fixes["first_round_public_failures"], fixes["fixed_later_public"])
    if protocol == "geosee":
        assert ours == want["fixed"] and public == (None, None)
    else:
        assert public == want["fixed_public"] and ours == (None, None)


def test_a_round_three_fix_shows_in_round_three_only(results: Path) -> None:
    by_round = summary_tables(results)["success_by_round"].filter(model="a")
    solved = dict(by_round.select("round", "solved_by_round").iter_rows())
    assert solved[2] == solved[1] and solved[3] == solved[2] + 1  # p1, fixed in round 3


@pytest.mark.parametrize("model", list(MODELS))
def test_error_transitions(results: Path, model: str) -> None:
    table = summary_tables(results)["error_transitions"].filter(model=model)
    got = {(f, t): n for f, t, n in table.select("from_kind", "to_kind", "count").iter_rows()}
    assert got == _expected(model)["transitions"]
    shares = table.group_by("from_kind").agg(pl.col("share_of_from").sum())
    assert all(s == pytest.approx(1.0) for s in shares["share_of_from"])


def test_error_table_shows_our_category_and_the_public_kind(results: Path) -> None:
    errors = summary_tables(results)["error_categories"].filter(model="a")
    pairs = dict(errors.select("error_category", "error_category_public").iter_rows())
    assert pairs["engine_error"] == PUBLIC_KIND["engine_error"]
    assert pairs["none"] == "none"


def test_results_json_holds_the_runs_rates_and_self_correction(tmp_path: Path) -> None:
    want = _expected("a")
    results = write_results(tmp_path)
    document = json.loads(write_results_json(results, "a").read_text())
    overall = document["results"]["overall"]
    assert document["config"]["protocol"] == overall["protocol"] == "geosee"
    assert overall["public_success_pct_all"] is None  # our loop stops on our rule
    assert overall["success_pct_clean"] == pytest.approx(100 * want["success_clean"], abs=1e-3)
    public_doc = json.loads(
        write_results_json(write_results(tmp_path / "p", {"a": "public"}), "a").read_text()
    )
    public = public_doc["results"]["overall"]
    assert public["protocol"] == "public" and public["success_pct_all"] is None
    assert public["public_success_pct_all"] == pytest.approx(100 * want["public_all"], abs=1e-3)
    self_correction = document["results"]["self_correction"]
    rounds = [
        (r["round"], r["solved"], r["solved_public"]) for r in self_correction["success_by_round"]
    ]
    assert rounds == [(k, ours, None) for k, ours, _ in want["by_round"]]
    fixes = self_correction["feedback_fixes"]
    assert (fixes["first_round_failures"], fixes["fixed_later"]) == want["fixed"]
    moves = {(t["from"], t["to"]): t["count"] for t in self_correction["transitions"]}
    assert moves == want["transitions"]


def test_shards_written_before_the_public_columns_are_judged_from_their_scores(
    tmp_path: Path,
) -> None:
    root = tmp_path / "geobuild" / "model=old"
    write_run_record(root, {"problems": [{"id": i} for i in ("x", "y", "z")]})
    old = [
        _row("x", 1, None, 1.0, 0.9),  # public success only
        _row("y", 1, "geometric", 1.0, 1.0),  # an error blocks it
        _row("z", 1, None, 0.8, 1.0),  # below the public threshold
    ]
    for r in old:
        for column in ("success_public", "error_category_public", "data_errors"):
            del r[column]
    batch = {c: np.array([r[c] for r in old], dtype=object) for c in old[0]}
    batch["request_key"] = np.array(["kx", "ky", "kz"], dtype=object)
    batch["sampling_params"] = np.array([{}] * 3, dtype=object)
    RoundWriter(str(root / "round=1"), {"model": "old"})(batch)
    problems = summary_tables(tmp_path)["problems"]
    assert dict(problems.select("problem_id", "success_public").iter_rows()) == {
        "x": True,
        "y": False,
        "z": False,
    }
    public = dict(problems.select("problem_id", "error_category_public").iter_rows())
    assert public["y"] == PUBLIC_KIND["geometric"]


def test_a_round_written_before_the_public_columns_is_read_not_quarantined(
    tmp_path: Path,
) -> None:
    root = tmp_path / "geobuild" / "model=old"
    rows = [{**_row("x", 1, None, 1.0, 1.0), "request_key": "k"}]
    batch = {c: np.array([r[c] for r in rows], dtype=object) for c in rows[0]}
    batch["sampling_params"] = np.array([{}], dtype=object)
    RoundWriter(str(root / "round=1"), {"model": "old"})(batch)
    (shard,) = (root / "round=1").glob("part-*.parquet")
    table = pq.read_table(shard)
    pq.write_table(table.drop_columns(list(ADDED_LATER)), shard)  # as written before them
    read = read_round(root, 1)
    assert read["problem_id"].to_list() == ["x"] and read["success"].to_list() == [True]
    assert read["success_public"].to_list() == [None]
    assert shard.is_file()  # still in place: not quarantined
