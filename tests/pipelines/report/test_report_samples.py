"""The sample browser shows every prompt whole (issue 39: prompts sat in a 9-line scroll box
and read as clipped mid-sentence). Built from result rows in memory: no Ray."""

from __future__ import annotations

import html
import re
from pathlib import Path

import polars as pl

from pipelines.report.samples import samples_page

LAST_SENTENCE = "The last sentence of this prompt is here & <intact>."


def _row(prompt: str, system: str) -> dict[str, object]:
    return {
        "model": "model-a", "engine": "hf", "setup": "text", "task": "C-BCT-CT",
        "item_id": "C-BCT-CT-0000", "options": ["yes", "no"], "answer": "yes",
        "answer_type": "choice", "system_prompt": system, "prompt": prompt,
        "generated_text": '{"answer": "yes"}', "parsed": "yes", "valid": True,
        "correct": True, "engine_error": None,
    }  # fmt: skip


def test_a_long_prompt_appears_whole_outside_any_scroll_box(tmp_path: Path) -> None:
    prompt = ("Is the point inside the circle? " * 160)[:4950] + LAST_SENTENCE
    system = "Answer with JSON only. " * 20 + "System prompt ends here."
    assert len(prompt) > 5000
    samples_page(pl.DataFrame([_row(prompt, system)]), [], tmp_path)
    page = (tmp_path / "samples/pages/C-BCT-CT--text--1.html").read_text()
    assert html.escape(prompt) in page  # every character, escaped as the rest of the page
    assert html.escape(system) in page
    assert html.escape(LAST_SENTENCE) in page and LAST_SENTENCE not in page
    cell = re.search(r'<div class="(\w+)">(?:(?!<div).)*?' + re.escape(html.escape(prompt)), page,
                     re.S)  # fmt: skip
    assert cell is not None
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert style is not None
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", style.group(1))
    boxes = [
        (selector.strip(), body)
        for selector, body in rules
        if f".{cell.group(1)}" in selector and re.search(r"max-height|overflow", body)
    ]
    assert not boxes, boxes  # no fixed-height or scrolling box around the prompt


def test_the_model_filter_names_each_tagged_model_with_its_tag(tmp_path: Path) -> None:
    """The filter's options say what the rows say: a baseline reads `random (baseline)`,
    while the option's value (the address's #model=) stays the bare name."""
    rows = [_row("p", "s"), {**_row("p", "s"), "model": "random", "engine": "random"}]
    samples_page(pl.DataFrame(rows), [], tmp_path)
    page = (tmp_path / "samples/pages/C-BCT-CT--text--1.html").read_text()
    select = re.search(r'<select id="f-model"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None
    options = re.findall(r'<option value="([^"]*)">([^<]*)</option>', select.group(1))
    assert options == [("", "all"), ("model-a", "model-a"), ("random", "random (baseline)")]
