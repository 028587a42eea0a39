"""Issue 39: Table 1 (key results) set a 100-item row beside a 500-item one with nothing to
say which is surer, and Table 2's cells had no interval. Each accuracy now carries its 95%
Wilson interval and the key results one items column per setup; the page prints an interval
under its value, CSV and Markdown as a column beside. Built from result rows in memory."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pipelines.report import tables as rt
from pipelines.report.chance import wilson_interval
from pipelines.report.html_page import Section, Table, write_report
from pipelines.report.key_results import key_table

INTERVAL_SUFFIX = ", 95% interval"  # the column beside a value that holds its interval


def interval_text(right: int, n: int) -> str:
    return "[{:.1f}, {:.1f}]".format(*wilson_interval(right, n))


# Items per setup: text has four times the items of dotted.
ITEMS = {"text": 40, "dotted": 10}


def _results() -> pl.DataFrame:
    rows = []
    for setup, items in ITEMS.items():
        for n in range(items):
            for task, options in (("C-BCT-CT", ["yes", "no"]), ("N-SCP-TTT", ["a", "r", "o"])):
                rows.append(
                    {
                        "model": "model-a", "engine": "hf", rt.WEIGHTS: "real", "setup": setup,
                        "task": task, "category": "c", "item_id": f"{task}-{n:04d}",
                        "options": options, "answer_type": "choice",
                        "correct": n % 4 != 0, "valid": True, "engine_error": None,
                    }
                )  # fmt: skip
    return pl.DataFrame(rows)


def test_key_results_have_one_items_column_per_setup_and_each_interval() -> None:
    df = _results()
    row = key_table(df).row(0, named=True)
    for setup, items in ITEMS.items():
        title = rt.SETUP_TITLES[setup]
        assert row[f"{title}, items"] == 2 * items  # two tasks
        right = 2 * (items - -(-items // 4))  # every 4th item wrong
        assert row[f"{title} (%){INTERVAL_SUFFIX}"] == interval_text(right, 2 * items)


def test_table2_cells_carry_their_interval_in_every_copy(tmp_path: Path) -> None:
    df = _results()
    table = rt.table2_with_intervals(rt.table2(df), df)
    groups = ["C-BCT", "N-SCP"]
    assert table.columns == ["setup", "model"] + [
        c for g in groups for c in (g, g + INTERVAL_SUFFIX)
    ]
    dotted = table.filter(pl.col("setup") == "dotted").row(0, named=True)
    assert dotted["C-BCT"] == 70.0
    assert dotted["C-BCT" + INTERVAL_SUFFIX] == interval_text(7, 10) == "[39.7, 89.2]"
    section = Section("Table 2", "", [Table("table2", "Table 2", table)])
    page = write_report(tmp_path, "report", "", [section]).read_text()
    body = page[page.index('id="table2"') :].split("</table>")[0]
    heads = re.findall(r"<th>([^<]*)</th>", body)
    assert heads == ["setup", "model", *groups]  # the interval prints in the cell, not beside
    assert '70.0 <span class="ci">[39.7, 89.2]</span></td>' in body
    markdown = (tmp_path / "tables" / "table2.md").read_text()
    csv = (tmp_path / "tables" / "table2.csv").read_text()
    assert "C-BCT, 95% interval" in markdown.splitlines()[0]
    assert r"\[39.7, 89.2\]" in markdown and '"[39.7, 89.2]"' in csv


def test_console_and_report_name_each_interval_alike(model_report: tuple[Path, Path]) -> None:
    """Issue 50: one name per interval method, in summarize's titles and on the report."""
    from pipelines.noregeo.intervals import BOOTSTRAP_METHOD, WILSON_METHOD
    from pipelines.noregeo.summarize import TITLES

    _results, out = model_report
    page = (out / "index.html").read_text()
    assert BOOTSTRAP_METHOD in TITLES["overall"] and "scipy.stats.bootstrap" in BOOTSTRAP_METHOD
    assert BOOTSTRAP_METHOD in page and WILSON_METHOD in page
