"""The report's tables recomputed from the raw rows: Table 2's cells and best marks, Table 3's
mean and spread, the gap, MSE, engine-error and pair-consistency tables, the headline, and
the reference rows (human, random weights, baselines) tagged and kept out of every
across-model statistic.
"""

from __future__ import annotations

import csv
import re

import numpy as np
import polars as pl
import pytest

from pipelines.noregeo.summarize import load_results
from pipelines.report.html_page import INTERVAL_SUFFIX
from pipelines.report.tables import TABLE3_SPREAD
from tests.pipelines.report.report_support import (
    BASELINES,
    UNDER_TEST,
    _csv,
    _markdown_rows,
    _plain_markdown,
    _tagged_rows,
)


def test_table2_oracle_is_100_everywhere_and_cells_match_raw_rows(report) -> None:
    results, out = report
    table2 = _csv(out, "table2")
    table2 = table2.select(c for c in table2.columns if not c.endswith(INTERVAL_SUFFIX))
    oracle = table2.filter(pl.col("model") == "oracle").drop("setup", "model", "tag")
    assert oracle.height == 3 and (oracle.to_numpy() == 100.0).all()
    raw = load_results(results)
    for row in table2.iter_rows(named=True):
        for group in (c for c in table2.columns if c not in ("setup", "model", "tag")):
            kind, code = group.split(" ")[0].split("-")
            part = raw.filter(
                (pl.col("model") == row["model"])
                & (pl.col("setup") == row["setup"])
                & pl.col("task").str.starts_with(f"{kind}-{code}-")
            )
            if group == "N-SCP w/o TTT":  # N-SCP without triangle_type
                part = part.filter(pl.col("task") != "N-SCP-TTT")
            expected = (
                round(float(np.mean(part["correct"].to_numpy())) * 100, 1) if part.height else None
            )
            assert (
                row[group] == pytest.approx(expected)
                if expected is not None
                else row[group] is None
            )


def test_human_row_only_in_dotted_block_and_not_in_table3(model_report) -> None:
    _results, out = model_report
    table2 = _csv(out, "table2")
    assert table2.filter(pl.col("model") == "human")["setup"].to_list() == ["dotted"]
    assert set(_csv(out, "table3_long")["models"].to_list()) == {len(UNDER_TEST)}


def test_random_weights_and_baselines_are_tagged_rows_after_the_models(model_report) -> None:
    _results, out = model_report
    table2 = _csv(out, "table2")
    for setup in ("text", "full"):
        order = table2.filter(pl.col("setup") == setup)["model"].to_list()
        # the model under test first, then the random-weight model, then the baselines
        assert order == ["model-a", "model-b", *BASELINES]
    page = (out / "index.html").read_text()
    expected = {"model-b": "random weights"} | {m: "baseline" for m in BASELINES}
    for table in ("key_results", "overall", "table2", "headline_answer_formats"):
        assert _tagged_rows(page, table) == expected, table
    for table in ("key_results", "overall", "table2"):
        body = page[page.index(f'id="{table}"') :].split("</table>")[0]
        assert '<td class="txt">model-a</td>' in body, table  # untagged: a model under test
    # Where models are columns, the column heads carry the tag.
    gap = page[page.index('id="gap_tasks"') :].split("</thead>")[0]
    assert '<th class=ref>model-b <span class="tag">random weights</span></th>' in gap
    assert '<th class=ref>oracle <span class="tag">baseline</span></th>' in gap
    # The banner names each tagged model once, with what its tag means.
    banner = re.search(r'<p class="banner">(.*?)</p>', page, re.S)
    assert banner is not None
    assert "model-b: tagged random weights" in banner.group(1)
    assert "constant, oracle, random: tagged baseline" in banner.group(1)
    assert "model-a" not in banner.group(1)


def test_csv_and_markdown_copies_carry_the_row_tags(model_report) -> None:
    """A reader of tables/*.csv or *.md sees what the page's row tags say (issue 39)."""
    _results, out = model_report
    expected = {"model-b": "random weights"} | {m: "baseline" for m in BASELINES}
    for table in ("key_results", "overall", "table2"):
        frame = _csv(out, table)
        assert frame.columns[frame.columns.index("model") + 1] == "tag", table
        tags = dict(frame.select("model", "tag").unique().iter_rows())
        assert {m: t for m, t in tags.items() if t is not None} == expected, table
        assert tags["model-a"] is None, table  # a model under test: no tag
        header = _markdown_rows(out / "tables" / f"{table}.md")[0]
        assert header[header.index("model") + 1] == "tag", table
    page = (out / "index.html").read_text()
    for table in ("key_results", "overall", "table2"):  # the page tags the model cell instead
        head = page[page.index(f'id="{table}"') :].split("</thead>")[0]
        assert "<th>tag</th>" not in head, table


def test_no_best_marks_on_tagged_rows_and_none_without_a_model_under_test(
    model_report, report
) -> None:
    _results, out = model_report
    page = (out / "index.html").read_text()
    for table in ("key_results", "table2"):
        body = page[page.index(f'id="{table}"') :].split("</table>")[0]
        rows = body.split("<tr")[2:]
        marked = [r for r in rows if "best" in r or "second" in r]
        assert marked and all(">model-a</td>" in r for r in marked), table
    _results, baselines_only = report
    page = (baselines_only / "index.html").read_text()
    assert ' best"' not in page and ' second"' not in page  # no mark in any cell
    assert "No model under test ran (every row is tagged): no best marks." in page


def test_only_baselines_means_no_table3(report) -> None:
    _results, out = report
    assert not (out / "tables" / "table3.csv").exists()
    assert not (out / "tables" / "table3_long.csv").exists()
    page = (out / "index.html").read_text()
    assert "only reference rows (oracle, random, constant) have results" in page


def test_table3_is_mean_and_sample_std_over_model_task_values(model_report) -> None:
    """TABLE3_METHOD: one value per model under test and task of the category."""
    results, out = model_report
    raw = load_results(results)  # engine errors count as wrong (the paper's accuracy)
    long = _csv(out, "table3_long")
    assert long.height
    for row in long.iter_rows(named=True):
        values = []
        for model in UNDER_TEST:
            part = raw.filter(
                (pl.col("model") == model)
                & (pl.col("setup") == row["setup"])
                & (pl.col("task").str.split("-").list.get(1) == row["code"])
            )
            for task in sorted(set(part["task"].to_list())):
                values.append(part.filter(pl.col("task") == task)["correct"].mean() * 100)
        assert row["values"] == len(values)
        assert row["mean"] == pytest.approx(round(np.mean(values), 1), abs=0.051)
        if len(values) == 1:  # one value has no sample std
            assert row["std"] is None
        else:
            assert row["std"] == pytest.approx(round(np.std(values, ddof=1), 1), abs=0.051)
    display = _csv(out, "table3")
    first = long.filter(pl.col("code") == "ACM", pl.col("setup") == "full").row(0, named=True)
    acm = display.filter(pl.col("Task category").str.contains("ACM"))
    assert acm["Text with full images" + TABLE3_SPREAD][0] == f"{first['mean']} ± {first['std']}"
    page = (out / "index.html").read_text()
    assert "Method: model x task." in page and "Pooled variant" not in page
    assert not (out / "tables" / "table3_pooled.csv").exists()


def test_table3_cell_of_one_model_has_no_spread() -> None:
    """With one model in a setup, ddof=1 has no std: the cell says so, not "± 0.0"."""
    from pipelines.report.tables import table3

    long = pl.DataFrame(
        {
            "category": ["Area comparison", "Area comparison"],
            "code": ["ACM", "ACM"],
            "setup": ["text", "dotted"],
            "models": [2, 1],
            "mean": [40.0, 37.5],
            "std": [5.0, None],
        }
    )
    row = table3(long).row(0, named=True)
    assert row["Text" + TABLE3_SPREAD] == "40.0 ± 5.0"
    assert row["Text with dotted images" + TABLE3_SPREAD] == "37.5 ± –"  # every cell's shape


def test_gap_is_full_minus_dotted_per_task(report) -> None:
    _results, out = report
    gap = _csv(out, "gap_tasks")
    full, dotted = _csv(out, "accuracy_tasks_full"), _csv(out, "accuracy_tasks_dotted")
    tasks = gap.filter(pl.col("task") != "mean")
    assert "human" not in gap.columns  # the human ran the dotted setup only
    for model in BASELINES:
        expected = full[model].to_numpy() - dotted[model].to_numpy()
        assert np.allclose(tasks[model].to_numpy(), expected, atol=0.051)
        mean_row = gap.filter(pl.col("task") == "mean")[model][0]
        assert mean_row == pytest.approx(expected.mean(), abs=0.051)


def test_mse_table_uses_valid_numeric_answers(report) -> None:
    results, out = report
    raw = load_results(results)
    mse = _csv(out, "mse_tasks_text")
    assert set(mse["task"].to_list()) == set(
        raw.filter(pl.col("answer_type") != "choice")["task"].to_list()
    )
    assert np.allclose(mse["oracle"].to_numpy(), 0.0, atol=1e-6)
    part = raw.filter(
        (pl.col("model") == "random")
        & (pl.col("setup") == "text")
        & (pl.col("task") == "N-ECL-SLT")
    )
    sq = [s for s, v in zip(part["sq_error"], part["valid"], strict=True) if v and s is not None]
    value = mse.filter(pl.col("task") == "N-ECL-SLT")["random"][0]
    assert value == pytest.approx(sum(sq) / len(sq), abs=1e-3)


def test_every_table_has_matching_csv_and_markdown(model_report) -> None:
    _results, out = model_report
    names = sorted(p.stem for p in (out / "tables").glob("*.csv"))
    assert sorted(p.stem for p in (out / "tables").glob("*.md")) == names
    expected = {"table2", "table3", "pair_consistency", "invalid_rates", "engine_error_rates"}
    assert expected | {"gap_tasks", "provenance_runs", "provenance_items"} <= set(names)
    for name in names:
        with (out / "tables" / f"{name}.csv").open() as f:
            csv_rows = list(csv.reader(f))
        md_rows = _markdown_rows(out / "tables" / f"{name}.md")
        assert len(md_rows) == len(csv_rows), name
        for csv_row, md_row in zip(csv_rows, md_rows, strict=True):
            for a, b in zip(csv_row, md_row, strict=True):
                try:
                    assert float(a) == pytest.approx(float(b), abs=1e-4), name
                except ValueError:
                    assert a.strip('"') == _plain_markdown(b), name
    html = (out / "index.html").read_text()
    assert html.count("<table>") == len(names)


def test_engine_errors_apart_from_invalid_outputs(model_report) -> None:
    results, out = model_report
    raw = load_results(results).filter(pl.col("model") == "model-a")
    errors, invalid = _csv(out, "engine_error_rates"), _csv(out, "invalid_rates")
    for setup in ("text", "dotted", "full"):
        part = raw.filter(pl.col("setup") == setup)
        failed = part["engine_error"].is_not_null()
        expected_errors = round(100 * failed.sum() / part.height, 1)
        answered = part.filter(~failed)
        expected_invalid = round(100 * (~answered["valid"]).sum() / answered.height, 1)
        row = errors.filter(pl.col("model") == "model-a")[setup][0]
        assert row == pytest.approx(expected_errors) and row > 0
        assert invalid.filter(pl.col("model") == "model-a")[setup][0] == pytest.approx(
            expected_invalid
        )
    assert (errors.filter(pl.col("model") == "oracle").drop("model", "tag").to_numpy() == 0).all()


def test_pair_consistency_counts_pairs_with_both_items_right(report) -> None:
    results, out = report
    raw = load_results(results).filter(pl.col("pair_id").is_not_null())
    table = _csv(out, "pair_consistency")
    assert (table["oracle"].to_numpy() == 100.0).all()
    for row in table.iter_rows(named=True):
        part = raw.filter(
            (pl.col("model") == "random")
            & (pl.col("setup") == row["setup"])
            & (pl.col("task") == row["task"])
        )
        both: dict[str, list[bool]] = {}
        for pair, correct in zip(part["pair_id"], part["correct"], strict=True):
            both.setdefault(pair, []).append(correct)
        full = [all(v) for v in both.values() if len(v) == 2]
        assert row["pairs"] == len(full)
        assert row["random"] == pytest.approx(round(100 * sum(full) / len(full), 1))


def test_headline_binary_and_multiple_choice_recomputed(model_report) -> None:
    results, out = model_report
    raw = load_results(results)  # engine errors count as wrong (the paper's accuracy)
    table = _csv(out, "headline_answer_formats")
    assert {"model-a", "model-b", "human", *BASELINES} == set(table["model"].to_list())
    for row in table.iter_rows(named=True):
        part = raw.filter(
            (pl.col("model") == row["model"])
            & (pl.col("setup") == row["setup"])
            & (pl.col("answer_type") == "choice")
        )
        binary = part.filter(pl.col("options").list.len() == 2)
        assert row["multiple_choice_n"] == part.height and row["binary_n"] == binary.height
        assert row["multiple_choice"] == pytest.approx(round(part["correct"].mean() * 100, 1))
        if binary.is_empty():  # the human's few voted items may hold no binary one
            assert row["binary"] is None
        else:
            assert row["binary"] == pytest.approx(round(binary["correct"].mean() * 100, 1))
    best = _csv(out, "headline_best")
    for row in best.iter_rows(named=True):
        models = table.filter((pl.col("setup") == row["setup"]) & pl.col("model").is_in(UNDER_TEST))
        assert row["best_binary"] == pytest.approx(models["binary"].max())
        assert row["best_multiple_choice"] == pytest.approx(models["multiple_choice"].max())
    # The paper's definition: the mean of the Classification cells (C-ACM, C-BCT, C-SYM).
    paper = _csv(out, "headline_paper")
    assert paper.height
    for row in paper.iter_rows(named=True):
        part = raw.filter(
            (pl.col("model") == row["model"])
            & (pl.col("setup") == row["setup"])
            & pl.col("task").str.starts_with("C-")
        )
        groups = part.group_by(pl.col("task").str.slice(0, 5)).agg(pl.col("correct").mean())
        assert row["cells"] == groups.height
        assert row["classification"] == pytest.approx(
            round(groups["correct"].mean() * 100, 1), abs=0.051
        )


def test_table2_best_cells_are_bold_models_only(model_report) -> None:
    _results, out = model_report
    page = (out / "index.html").read_text()
    table2 = page.split('id="table2"')[1].split("</table>")[0]
    for row in table2.split("<tr")[2:]:
        if 'class="ref"' in row or ">human<" in row:
            assert "best" not in row and "second" not in row
    assert 'class="num best"' in table2
