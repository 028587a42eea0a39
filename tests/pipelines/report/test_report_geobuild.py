"""The report's GeoBuild part: both verdicts and denominators, the self-correction tables
and figure, and the audit's upper bound, from hand-built results (no Ray)."""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl
import pytest
from PIL import Image

from geometry.dsl.dataset import NOTHING_TO_JUDGE
from pipelines import cli
from pipelines.report.geobuild_sections import (
    SELF_CORRECTION,
    SOLVER,
    audit_section,
    audit_upper_bound,
    collapse_agreeing,
    geobuild_lines,
    geobuild_section,
    geobuild_tables,
    read_audit,
    solver_in_loop,
)
from pipelines.report.html_page import Figure, Heading, Table
from tests.pipelines.geobuild import test_geobuild_self_correction as self_correction
from tests.pipelines.geobuild.test_geobuild_self_correction import _expected, _row, write_results


def _tables(section) -> dict[str, pl.DataFrame]:
    return {b.name: b.frame for b in section.blocks if isinstance(b, Table)}


def test_geobuild_section_shows_each_runs_rate_and_self_correction(tmp_path: Path) -> None:
    """a ran the public protocol, b ours: each row's success is by the rule its run stopped
    on, with the protocol beside it, and the public-success column holds a's alone."""
    results = write_results(tmp_path / "results", {"a": "public"})
    out = tmp_path / "report"
    (out / "figures").mkdir(parents=True)
    section = geobuild_section(results, out)
    tables = _tables(section)
    overall = {r["model"]: r for r in tables["geobuild_overall"].iter_rows(named=True)}
    a, b = overall["a"], overall["b"]
    assert (a["protocol"], b["protocol"]) == ("public", "geosee")
    assert a["public success % (clean data)"] == pytest.approx(
        round(100 * _expected("a")["public_clean"], 1)
    )
    assert b["success % (all)"] == pytest.approx(round(100 * _expected("b")["success_all"], 1))
    assert a["success % (all)"] is None and b["public success % (clean data)"] is None
    by_round = tables["geobuild_success_by_round"].filter(model="a")
    assert [r[2] for r in _expected("a")["by_round"]] == by_round[
        "solved_public_by_round"
    ].to_list()
    lines = geobuild_lines(geobuild_tables(results), None)
    assert any("a (protocol public)" in line and "by the public rule" in line for line in lines)
    assert not any("a (protocol public)" in line and "by our rule" in line for line in lines)
    assert {"geobuild_feedback_fixes", "geobuild_error_transitions"} <= set(tables)
    (figure,) = [b for b in section.blocks if isinstance(b, Figure)]
    with Image.open(out / figure.path) as image:
        assert image.size[0] > 100 and image.size[1] > 100


def test_audit_upper_bound_by_both_rules_and_denominators(tmp_path: Path) -> None:
    audit = tmp_path / "audit.csv"
    rows = [  # id, status, success_public, broken_data
        ("1", "solved", "true", "false"),
        ("2", "solved", "true", "true"),
        ("3", "no_construction", "false", "false"),
        ("4", "data_error", "false", "true"),
    ]
    audit.write_text(
        "id,status,conflicts,reason,restarts,residual,seconds,success_public,broken_data\n"
        + "".join(f"{i},{s},,,1,0,0.1,{p},{b}\n" for i, s, p, b in rows)
    )
    bound = audit_upper_bound(read_audit(audit)).row(0, named=True)
    clean = [r for r in rows if r[3] == "false"]
    assert bound["problems"] == len(rows)
    assert bound["broken_data"] == len(rows) - len(clean)
    assert bound["success % (all)"] == pytest.approx(
        round(100 * sum(r[1] == "solved" for r in rows) / len(rows), 1)
    )
    assert bound["public success % (clean data)"] == pytest.approx(
        round(100 * sum(r[2] == "true" for r in clean) / len(clean), 1)
    )
    assert "audit_upper_bound" in _tables(audit_section(read_audit(audit)))


def test_an_audit_from_before_the_columns_still_reports(tmp_path: Path) -> None:
    audit = tmp_path / "audit.csv"
    audit.write_text("id,status,conflicts,reason,restarts,residual,seconds\n1,solved,,,1,0,0.1\n")
    tables = _tables(audit_section(read_audit(audit)))
    assert "audit_status" in tables and "audit_upper_bound" not in tables


def test_report_command_writes_the_geobuild_tables_and_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(cli.COMMANDS, "report", ("pipelines.report.build", "report"))
    results = write_results(tmp_path / "results")
    out = tmp_path / "report"
    assert cli.main(["report", str(results), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    assert 'src="figures/geobuild_rounds.png"' in page
    overall = pl.read_csv(out / "tables" / "geobuild_overall.csv")
    assert {"success % (all)", "public success % (clean data)"} <= set(overall.columns)
    fixes = pl.read_csv(out / "tables" / "geobuild_feedback_fixes.csv").filter(model="a")
    # Where both rules count the same on every row, one column (named so) holds both.
    failures, fixed = (
        next(fixes[c][0] for c in fixes.columns if c in (name, f"{name} (both rules)"))
        for name in ("first_round_failures", "fixed_later")
    )
    assert (failures, fixed) == _expected("a")["fixed"]


def _solver_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The solver through the loop, 2 rounds: s1 solved in round 1; s2, a problem with
    nothing to judge, and s3 find no program in either round (nothing changes)."""
    rows = [
        _row("s1", 1, None, 1.0, 1.0),
        _row("s2", 1, "no_program", 0.0, 0.0, data_errors=NOTHING_TO_JUDGE),
        _row("s2", 2, "no_program", 0.0, 0.0, data_errors=NOTHING_TO_JUDGE),
        _row("s3", 1, "no_program", 0.0, 0.0),
        _row("s3", 2, "no_program", 0.0, 0.0),
    ]
    monkeypatch.setattr(self_correction, "MODELS", {SOLVER: (rows, ["s1", "s2", "s3"], 2)})
    return write_results(tmp_path / "results")


def test_self_correction_is_one_sentence_when_no_round_changed_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _solver_results(tmp_path, monkeypatch)
    out = tmp_path / "report"
    (out / "figures").mkdir(parents=True)
    section = geobuild_section(results, out)
    names = set(_tables(section))
    assert not names & {f"geobuild_{n}" for n in SELF_CORRECTION}
    assert not [b for b in section.blocks if isinstance(b, Figure)]
    (heading,) = [b for b in section.blocks if isinstance(b, Heading)]
    assert "Up to 2 rounds ran and no round after the first changed any outcome" in heading.note
    assert "2 round-1 failures" in heading.note


def test_one_solver_upper_bound_the_loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The audit calls a problem with nothing to judge solved; the loop, running its empty
    program, does not. The page shows one figure: the loop's, which the audit's now equals."""
    results = _solver_results(tmp_path, monkeypatch)
    audit = tmp_path / "audit.csv"
    audit.write_text(
        "id,status,conflicts,reason,restarts,residual,seconds,success_public,broken_data\n"
        "s1,solved,,,1,0,0.1,true,false\n"
        f"s2,solved,,{NOTHING_TO_JUDGE},0,0,0.0,true,true\n"
        "s3,no_construction,,x,8,1,0.1,false,false\n"
    )
    frame = read_audit(audit)
    tables = geobuild_tables(results)
    assert not isinstance(tables, str) and solver_in_loop(tables)
    loop = tables["overall"].row(0, named=True)
    assert loop["success % (all)"] == pytest.approx(round(100 / 3, 1))
    bound = audit_upper_bound(frame).row(0, named=True)
    assert bound["success % (all)"] == loop["success % (all)"]  # not 2 of 3
    # Two rounds of our loop stop on our rule: the public rule's figure is not reported.
    assert loop["protocol"] == "geosee" and loop["public success % (all)"] is None
    assert "audit_upper_bound" not in _tables(audit_section(frame, "", solver_ran=True))
    lines = geobuild_lines(tables, frame)
    assert len(lines) == 1 and "the solver's upper bound (protocol geosee)" in lines[0]
    assert "3 problems: 33.3% by our rule" in lines[0]
    # Without the loop's run, the audit's figure is the one shown.
    (line,) = geobuild_lines("no GeoBuild results", frame)
    assert "upper bound (audit): 33.3% of 3 problems" in line


def test_columns_where_both_rules_agree_collapse_to_one() -> None:
    frame = pl.DataFrame(
        {
            "model": ["a", "b"],
            "solved": [3, 1],
            "solved_public": [3, 1],
            "success % (all)": [75.0, 25.0],
            "public success % (all)": [75.0, 50.0],
        }
    )
    shown, agree = collapse_agreeing(frame)
    assert agree == ["solved"]
    assert shown.columns == [
        "model", "solved (both rules)", "success % (all)", "public success % (all)"
    ]  # fmt: skip
    assert shown["solved (both rules)"].to_list() == [3, 1]


def test_solver_and_scripted_replies_are_tagged_as_what_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39: every row says what it is. The solver's row was tagged "baseline" and a run
    of scripted replies (`--engine programs`) looked like a model under test."""
    from pipelines.report.build import build_report
    from store.records import write_run_record

    models = {
        SOLVER: (self_correction.ROWS_A, ["p1", "p2", "p3", "p4"], 3),
        "replies": (self_correction.ROWS_B, ["q1", "q2", "q3", "q4"], 2),
        "zz-model": (self_correction.ROWS_B, ["q1", "q2", "q3", "q4"], 2),
    }
    monkeypatch.setattr(self_correction, "MODELS", models)
    results = write_results(tmp_path / "results")
    replies = {"name": "replies", "engine": "programs", "weights": "none"}
    write_run_record(results / "geobuild" / "model=replies", {"model": replies})
    page = build_report(results, tmp_path / "report").read_text()
    overall = page[page.index('id="geobuild_overall"') :].split("</table>")[0]
    assert f'<td class="txt">{SOLVER} <span class="tag">solver</span></td>' in overall
    assert '<td class="txt">replies <span class="tag">program replay</span></td>' in overall
    assert '<td class="txt">zz-model</td>' in overall  # a model under test: no tag
    # The banner says tagged rows come after the models under test: in every GeoBuild
    # table, though the model under test sorts last by name.
    for table in page.split('id="geobuild_')[1:]:
        rows = table.split("</table>")[0]
        if "zz-model" in rows and SOLVER in rows:
            assert rows.index("zz-model") < rows.index(f"{SOLVER} <span")
            assert rows.index("zz-model") < rows.index("replies <span")
    banner = html.unescape(page.split('<p class="banner">')[1].split("</p>")[0])
    assert f"{SOLVER}: tagged solver (GeoBuild's numerical solver" in banner
    assert "replies: tagged program replay (scripted GeoBuild replies" in banner
