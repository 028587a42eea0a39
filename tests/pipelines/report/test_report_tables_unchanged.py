"""Issue 50: the intervals moved to scipy and the pages to jinja2 templates; the report's
tables must not change. tests/fixtures/report_tables/ holds every table (CSV, provenance
aside: it names paths and times) of the `model_report` fixture's report as the code before
the change (c29f88e's pipelines/, with geometry/items.py of noregeo-gen-3, the items the
fixture now draws) wrote it; the report built now must write the same bytes."""

from __future__ import annotations

from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "report_tables"


def test_every_table_is_as_before_the_change(model_report: tuple[Path, Path]) -> None:
    _results, out = model_report
    before = {p.name: p.read_text() for p in FIXTURE.glob("*.csv")}
    now = {
        p.name: p.read_text()
        for p in (out / "tables").glob("*.csv")
        if not p.name.startswith("provenance")
    }
    assert len(before) > 20
    assert sorted(now) == sorted(before)
    changed = [name for name in before if now[name] != before[name]]
    assert not changed, changed
