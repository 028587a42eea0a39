"""Issue 50: the sample browser is an index and pages of ITEMS_PER_PAGE items (never one page
of every row), its HTML from autoescaped jinja2 templates, and a rerun links what did not
change from the previous report. Built from result rows in memory: no Ray."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import polars as pl
from PIL import Image

from pipelines.report.provenance import Record
from pipelines.report.samples import ITEMS_PER_PAGE, samples_page

HOSTILE = "<script>alert(1)</script>"


def _row(item: int, model: str, text: str = '{"answer": "yes"}', setup: str = "text") -> dict:
    return {
        "model": model, "engine": "hf", "setup": setup, "task": "C-BCT-CT",
        "item_id": f"C-BCT-CT-{item:04d}", "options": ["yes", "no"], "answer": '{"answer": "yes"}',
        "answer_type": "choice", "system_prompt": "s", "prompt": f"prompt {item}",
        "generated_text": text, "valid": True, "correct": text.endswith('"yes"}'),
        "engine_error": None,
    }  # fmt: skip


def test_a_model_name_or_answer_holding_markup_renders_as_text(tmp_path: Path) -> None:
    rows = [_row(0, HOSTILE, text=HOSTILE), _row(0, "model-a")]
    samples_page(pl.DataFrame(rows), [], tmp_path)
    pages = [tmp_path / "samples.html", *sorted((tmp_path / "samples/pages").glob("*.html"))]
    assert len(pages) == 2
    for page in pages:
        text = page.read_text()
        assert HOSTILE not in text, page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text, page
        assert len(re.findall(r"<script\b", text)) <= 1  # the page's own script only


def test_pages_hold_items_per_page_and_every_answer(tmp_path: Path) -> None:
    items = 2 * ITEMS_PER_PAGE + 3
    rows = [_row(i, m) for i in range(items) for m in ("model-a", "model-b")]
    index = samples_page(pl.DataFrame(rows), [], tmp_path).read_text()
    pages = sorted((tmp_path / "samples/pages").glob("*.json"))
    assert len(pages) == 3
    assert index.count('class="page"') == 3
    held = [json.loads(p.read_text()) for p in pages]
    assert sorted(len(p["items"]) for p in held) == [3, ITEMS_PER_PAGE, ITEMS_PER_PAGE]
    answers = sorted(
        (i["item_id"], a["model"]) for p in held for i in p["items"] for a in i["answers"]
    )
    assert answers == sorted((r["item_id"], r["model"]) for r in rows)
    html = (tmp_path / "samples/pages/C-BCT-CT--text--1.html").read_text()
    assert html.count('<tr class="sample') == 2 * ITEMS_PER_PAGE


def _items(folder: Path, count: int) -> Record:
    """An item table of `count` dotted items, each its own PNG, and the run record naming it."""
    folder.mkdir()
    images = []
    for i in range(count):
        buffer = io.BytesIO()
        Image.new("RGB", (64, 64), (i, 0, 0)).save(buffer, format="PNG")
        images.append(buffer.getvalue())
    pl.DataFrame({
        "item_id": [f"C-BCT-CT-{i:04d}" for i in range(count)], "setup": ["dotted"] * count,
        "image": images,
    }).write_parquet(folder / "part-C-BCT-CT.parquet")  # fmt: skip
    return Record("noregeo", "model=model-a", {"items": str(folder)})


def test_a_rerun_links_unchanged_pages_and_images_and_redoes_a_changed_one(tmp_path: Path) -> None:
    record = _items(tmp_path / "items", 2 * ITEMS_PER_PAGE)
    rows = [_row(i, "model-a", setup="dotted") for i in range(2 * ITEMS_PER_PAGE)]
    first, second = tmp_path / "first", tmp_path / "second"
    samples_page(pl.DataFrame(rows), [record], first)
    images = sorted((first / "samples/img").glob("*.png"))
    assert len(images) == 2 * ITEMS_PER_PAGE  # one file per image, named by its hash
    rows[-1] = _row(2 * ITEMS_PER_PAGE - 1, "model-a", text='{"answer": "no"}', setup="dotted")
    samples_page(pl.DataFrame(rows), [record], second, previous=first)
    page_1, page_2 = (f"samples/pages/C-BCT-CT--dotted--{n}.html" for n in (1, 2))
    assert (second / page_1).stat().st_ino == (first / page_1).stat().st_ino  # linked
    assert (second / page_2).stat().st_ino != (first / page_2).stat().st_ino  # rebuilt
    assert "wrong" in (second / page_2).read_text()
    for image in images:
        assert (second / "samples/img" / image.name).stat().st_ino == image.stat().st_ino
