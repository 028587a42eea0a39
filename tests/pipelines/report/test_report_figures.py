"""Every figure the report draws keeps its smallest text at least MIN_TEXT_PX tall as the page
shows it in a 1280 px window (issue 39: Figure 1's cell numbers were about 6 px). The page
shows a figure at its natural size up to FIGURE_MAX_PX wide and scales a wider one down
(html_page), so a text of `pt` points in a PNG `width` pixels wide saved at `dpi` shows
pt / 72 * dpi * min(1, FIGURE_MAX_PX / width) pixels tall. Drawn at the demo's size (25
tasks, 3 setups, 6 models; 8 probe tasks in 8 panels) and a sweep's (16 models), from frames
in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.figure
import matplotlib.text
import polars as pl
import pytest
from PIL import Image

from pipelines.report import figures
from pipelines.report.geobuild_sections import success_by_round_figure
from pipelines.report.html_page import FIGURE_MAX_PX

MIN_TEXT_PX = 10
TASKS = [f"{k}-{c}-T{i:02d}" for i, (k, c) in enumerate([("C", "BCT"), ("N", "SCP"), ("U", "PAP"),
         ("N", "ECL"), ("C", "SYM")] * 5)]  # fmt: skip
UNDER_TEST = ["smollm2-135m-instruct", "qwen2-vl-2b"]
REFERENCES = ["tiny-vlm", "oracle", "random", "constant"]
MODELS = UNDER_TEST + REFERENCES
TAGS = {"tiny-vlm": "random weights"} | {m: "baseline" for m in REFERENCES[1:]}


def _wide(first: str, rows: list[str], columns: list[str], scale: float) -> pl.DataFrame:
    data: dict[str, Any] = {first: rows}
    for c, column in enumerate(columns):
        data[column] = [((r * 7 + c * 13) % 100) * scale for r in range(len(rows))]
    return pl.DataFrame(data)


def _long_gaps(key: str, keys: list[str]) -> pl.DataFrame:
    rows = [{key: k, "model": m, "gap": float((i * 5 + j * 3) % 40 - 20)}
            for i, k in enumerate(keys) for j, m in enumerate(MODELS)]  # fmt: skip
    return pl.DataFrame(rows)


def _draw_every_figure(out: Path) -> None:
    setups = ["Text", "Text with dotted images", "Text with full images"]
    accuracy = {s: _wide("task", TASKS, MODELS, 1.0) for s in setups}
    figures.panel_heatmap(accuracy, "Accuracy", out / "accuracy.png", "accuracy", REFERENCES, TAGS)
    # A sweep's 16 models: too many to set the setups side by side, so the panels stack.
    sweep = [f"sweep-model-{i:02d}" for i in range(12)] + REFERENCES
    many = {s: _wide("task", TASKS, sweep, 1.0) for s in setups}
    figures.panel_heatmap(
        many, "Accuracy", out / "accuracy_sweep.png", "accuracy", REFERENCES, TAGS
    )
    mse = {s: _wide("task", TASKS[:10], MODELS, 3.7) for s in setups}
    figures.panel_heatmap(mse, "MSE", out / "mse.png", "mse", REFERENCES, TAGS)
    gap = _wide("task", [*TASKS, "mean"], MODELS, 0.4)
    figures.panel_heatmap({"full - dotted": gap}, "Gap", out / "gap.png", "gap", REFERENCES, TAGS)
    per_task = _long_gaps("task", TASKS)
    figures.gap_distribution(per_task, out / "gap_tasks.png", REFERENCES, "task", TAGS)
    codes = sorted({t.split("-")[1] for t in TASKS})
    per_category = _long_gaps("code", codes)
    figures.gap_distribution(per_category, out / "gap_categories.png", REFERENCES, tags=TAGS)
    probe_tasks = ["C-BCT-CT", "U-CPR-CDT", "U-SCP-STT", "U-PAP-PLT", "U-PAP-PT", "U-PAP-RAT",
                   "C-SYM-SST", "U-SYM-ST"]  # fmt: skip
    panels = {f"{config}, {images} test images": _wide("Train Dataset", probe_tasks,
              probe_tasks, 1.0) for config in ("UF", "FF", "UD", "FD")
              for images in ("full", "dotted")}  # fmt: skip
    figures.transfer_heatmap(panels, "Probe transfer matrix", out / "transfer.png")
    by_round = pl.DataFrame(
        [{"model": m, "round": r, "success % by round (all)": 10.0 * r,
          "public success % by round (all)": 8.0 * r}
         for m in ["solver", *UNDER_TEST] for r in range(1, 6)]
    )  # fmt: skip
    success_by_round_figure(by_round, out / "by_round.png")


def _smallest_text_pt(fig: matplotlib.figure.Figure) -> tuple[float, str]:
    """The smallest font size (pt) of the text the figure draws, and that text."""
    texts = [
        t
        for t in fig.findobj(matplotlib.text.Text)
        if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())
    ]
    smallest = min(texts, key=lambda t: t.get_fontsize())
    return float(smallest.get_fontsize()), smallest.get_text()


def test_every_figure_text_is_legible_at_1280_px(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved: list[tuple[Path, float, str, float]] = []
    original = matplotlib.figure.Figure.savefig

    def savefig(fig: matplotlib.figure.Figure, path: Any, **kwargs: Any) -> None:
        original(fig, path, **kwargs)
        pt, text = _smallest_text_pt(fig)
        saved.append((Path(path), pt, text, float(kwargs.get("dpi") or fig.dpi)))

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    _draw_every_figure(tmp_path)
    assert len(saved) == 8, [p.name for p, *_ in saved]  # every figure function drawn
    small = {}
    for path, pt, text, dpi in saved:
        with Image.open(path) as image:
            width = image.size[0]
        shown = pt / 72 * dpi * min(1.0, FIGURE_MAX_PX / width)
        if shown < MIN_TEXT_PX:
            small[path.name] = f"{text!r}: {pt:g} pt, {width} px wide -> {shown:.1f} px"
    assert not small, small


def test_heatmap_columns_of_references_say_what_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39: a heatmap's random-weight and baseline columns were only italic; their
    labels now carry the tag, as the gap figure's legend does (figures.reference_label)."""
    labels: list[str] = []
    original = matplotlib.figure.Figure.savefig

    def savefig(fig: matplotlib.figure.Figure, path: Any, **kwargs: Any) -> None:
        labels.extend(t.get_text() for t in fig.axes[0].get_xticklabels())
        original(fig, path, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    panels = {"Text": _wide("task", TASKS[:3], MODELS, 1.0)}
    figures.panel_heatmap(panels, "Accuracy", tmp_path / "a.png", "accuracy", REFERENCES, TAGS)
    assert labels == [
        *UNDER_TEST, "tiny-vlm (random weights)", "oracle (baseline)", "random (baseline)",
        "constant (baseline)",
    ]  # fmt: skip


STUDY = [f"org{i % 5}/family-{i:02d}-7b-instruct" for i in range(45)] + REFERENCES


def _overlaps(labels: list[matplotlib.text.Text], renderer: Any) -> int:
    """How many neighbouring tick labels' boxes overlap."""
    boxes = [t.get_window_extent(renderer) for t in labels if t.get_text()]
    return sum(a.overlaps(b) for a, b in zip(boxes, boxes[1:], strict=False))


def test_figures_at_45_models_are_legible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50, at the study's 45 models: text at least MIN_TEXT_PX as shown, model names
    that do not overlap, a gap legend of a few entries (45 were taller than the plot, their
    colours repeating every 10), and MSE numbers never in exponent form."""
    drawn: dict[str, tuple[float, str, float, int, int, list[str]]] = {}
    original = matplotlib.figure.Figure.savefig

    def savefig(fig: matplotlib.figure.Figure, path: Any, **kwargs: Any) -> None:
        original(fig, path, **kwargs)
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        overlaps = sum(_overlaps(ax.get_xticklabels(), renderer) for ax in fig.axes)
        entries = sum(len(legend.get_texts()) for legend in fig.legends)
        numbers = [t.get_text() for ax in fig.axes for t in ax.texts]
        pt, text = _smallest_text_pt(fig)
        drawn[Path(path).name] = (pt, text, float(kwargs.get("dpi") or fig.dpi), overlaps,
                                  entries, numbers)  # fmt: skip

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    setups = ["Text", "Text with dotted images", "Text with full images"]
    # 8 tasks keep it cheap: the column width and the names' layout depend on the models.
    accuracy = {s: _wide("task", TASKS[:8], STUDY, 1.0) for s in setups}
    figures.panel_heatmap(accuracy, "Accuracy", tmp_path / "acc.png", "accuracy", REFERENCES, TAGS)
    long = pl.DataFrame([{"task": t, "model": m, "gap": float((i * 7 + j) % 30 - 15)}
                         for i, t in enumerate(TASKS[:8])
                         for j, m in enumerate(STUDY)])  # fmt: skip
    figures.gap_distribution(long, tmp_path / "gap.png", REFERENCES, "task", TAGS)
    for name, (pt, text, dpi, overlaps, _entries, _numbers) in drawn.items():
        with Image.open(tmp_path / name) as image:
            width = image.size[0]
        assert pt / 72 * dpi * min(1.0, FIGURE_MAX_PX / width) >= MIN_TEXT_PX, (name, text)
        assert overlaps == 0, name
    assert drawn["gap.png"][4] <= 1 + len(REFERENCES)  # one entry for the models, one a baseline
    mse = {"Text": _wide("task", TASKS[:5], MODELS, 1e4).with_columns(pl.col(MODELS[0]) * 1e-7)}
    figures.panel_heatmap(mse, "MSE", tmp_path / "mse.png", "mse", REFERENCES, TAGS)
    assert drawn["mse.png"][5] and not [n for n in drawn["mse.png"][5] if "e" in n]
