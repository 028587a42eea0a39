"""report: hostile model names stay text in every copy; a crash leaves no partial report.

A model named like maths for matplotlib (`$\\frac{$`), markup for a browser (`<script>`), a
Markdown cell break (`|`) or a spreadsheet formula (`=`) must render as that text in the
figures, the page, and the Markdown and CSV copies.
"""

from __future__ import annotations

import csv
import html
from pathlib import Path

import polars as pl
import pytest
from PIL import Image

from pipelines import cli
from pipelines.report import build as report_module
from pipelines.report.escape import csv_table, csv_text, markdown_text

NASTY = r"a$\frac{$b<script>alert(1)</script>|x"
FORMULA = "=HYPERLINK(1)"


def test_markdown_text_is_inert() -> None:
    text = markdown_text(NASTY + "\n*_`[x](y)`_*")
    assert "<" not in text and ">" not in text and "\n" not in text
    assert "\\|" in text and "\\`" in text and "\\*" in text and "\\[" in text


def test_csv_text_defuses_formulas_and_markup() -> None:
    assert csv_text(FORMULA) == "'" + FORMULA
    assert csv_text("-1+2") == "'-1+2" and csv_text("@x") == "'@x"
    assert csv_text(NASTY) == NASTY.replace("<", "&lt;").replace(">", "&gt;")
    assert csv_text("plain") == "plain"


def test_csv_table_escapes_text_and_headers_not_numbers() -> None:
    frame = pl.DataFrame({"model": [FORMULA, "ok"], NASTY: [-3.5, 1.0]})
    rows = list(csv.reader(csv_table(frame).splitlines()))
    assert rows[0] == ["model", csv_text(NASTY)]
    assert rows[1] == ["'" + FORMULA, "-3.5"]  # a negative number stays a number


@pytest.fixture(scope="module")
def nasty_results(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One item per task and setup from two oracle runs, their rows then named with hostile
    model names. `--model` takes plain names only (issue 38: a name becomes a folder), so the
    names are written into the shards as another writer, or an older version, could have."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path_factory.mktemp("nasty_results")
    for plain, name in (("nasty", NASTY), ("formula", FORMULA)):
        args = ["evaluate", "--items", str(small_items), "--engine", "oracle", "--model", plain]
        assert cli.main([*args, "--per-task", "1", "--out", str(out)]) == 0
        shards = list((out / "noregeo" / f"model={plain}").rglob("*.parquet"))
        assert shards
        for shard in shards:
            table = pq.read_table(shard)
            column = pa.array([name] * table.num_rows, table.schema.field("model").type)
            index = table.schema.get_field_index("model")
            pq.write_table(table.set_column(index, "model", column), shard)
    return out


def test_hostile_model_names_render_as_text_everywhere(nasty_results: Path, tmp_path: Path):
    out = tmp_path / "report"
    assert cli.main(["report", str(nasty_results), "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and html.escape(NASTY) in page
    for figure in (out / "figures").glob("*.png"):
        with Image.open(figure) as image:
            image.verify()
    assert len(list((out / "figures").glob("*.png"))) >= 4  # heatmaps with the names as ticks
    copies = sorted((out / "tables").glob("*.md")) + sorted((out / "tables").glob("*.csv"))
    for copy in copies:
        assert "<script>" not in copy.read_text(encoding="utf-8"), copy.name
    overall = list(csv.DictReader((out / "tables" / "overall.csv").open(encoding="utf-8")))
    models = {html.unescape(row["model"]) for row in overall}
    assert models == {NASTY, "'" + FORMULA}  # formulas keep a leading quote in the CSV copy
    for row in overall:
        assert not any(cell.startswith(("=", "+", "@")) for cell in row.values())


def test_a_crash_leaves_the_previous_report_whole(
    nasty_results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report"
    assert cli.main(["report", str(nasty_results), "--out", str(out)]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def crash(*_args: object) -> None:
        raise RuntimeError("disk full halfway")

    monkeypatch.setattr(report_module, "geobuild_section", crash)  # after the figures
    with pytest.raises(RuntimeError):
        cli.main(["report", str(nasty_results), "--out", str(out)])
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    with pytest.raises(RuntimeError):
        cli.main(["report", str(nasty_results), "--out", str(tmp_path / "fresh")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no partial folders
