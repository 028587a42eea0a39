"""Report figures (matplotlib, Agg): task x model heatmaps, one panel per setup side by side,
and the full-minus-dotted gap plots.

Colours follow the paper's appendix: accuracy red (low) to green (high); gaps blue where full
images help and red where they hurt. MSE is drawn on a per-task scale (each task's cells
divided by that task's largest MSE): areas, lengths and coordinates differ by orders of
magnitude, so one scale across tasks would colour only the task with the largest numbers.
The cells always print the raw value. Every figure has a legend: a labelled colour bar, a
grey patch for cells a model did not run and, where tagged rows are drawn, a note that their
columns (italic, after the dashed line) are not models under test (random-weight models and
baselines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.colors import Normalize, TwoSlopeNorm  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from pipelines.report.html_page import FIGURE_MAX_PX  # noqa: E402

DPI = 110
# Legible on the page in a 1280 px window (issue 39: cell numbers once showed about 6 px):
# the page scales a PNG wider than FIGURE_MAX_PX down to it, so text of `pt` points shows
# pt / 72 * min(DPI, FIGURE_MAX_PX / width in inches) px tall. No text is smaller than
# MIN_TEXT_PT and no figure wider than MAX_WIDTH_IN, where MIN_TEXT_PT still shows
# MIN_TEXT_PX (5% spare: bbox_inches="tight" may add a little); tests/pipelines/
# test_report_figures.py checks every figure.
MIN_TEXT_PX = 10
MIN_TEXT_PT = 8
MAX_WIDTH_IN = 0.95 * MIN_TEXT_PT / 72 * FIGURE_MAX_PX / MIN_TEXT_PX
# The numbers in a heatmap's cells: 8 pt at DPI 110 is about 12 px.
CELL_TEXT_PT = MIN_TEXT_PT
# A heatmap column per model: 0.7 in, narrowed to fit MAX_WIDTH_IN down to 0.4 in (three
# digits at CELL_TEXT_PT); narrower than that, the panels are stacked instead of side by side.
COLUMN_IN = (0.4, 0.7)
# Above this many models a heatmap prints no numbers in its cells (the folded tables under
# it hold them): 45 models x 25 tasks x 3 setups were 3,375 texts, 0.3 in columns too
# wide for the page and most of the 120 s the three heatmaps took (issue 50). Without
# numbers a column needs only its 8 pt name: NARROW_COLUMN_IN.
NUMBERED_MODELS = 16
NARROW_COLUMN_IN = 0.2
# Above this many models under test the gap plots draw them as grey dots with no legend
# entry each (a 45-entry legend was taller than the plot, and tab10 repeats every 10).
COLOURED_MODELS = 10
# Labels are model names and task IDs, not maths: `$` must stay a dollar sign (a name like
# `a$\frac{$b` made mathtext raise), and TeX must never see them.
PLAIN: dict[str, Any] = {"parse_math": False, "usetex": False}
MISSING = "#dddddd"
COLOURBAR_LABELS = {
    "accuracy": "accuracy (%)",
    "mse": "MSE / the task's largest MSE (per-task scale)",
    "gap": "accuracy(full) - accuracy(dotted), points",
}


def _colours(kind: str, values: np.ndarray) -> tuple[str, Normalize, np.ndarray]:
    """Colour map, norm and the values the colours are drawn from (MSE: per-task shares)."""
    finite = values[np.isfinite(values)]
    if kind == "accuracy":
        return "RdYlGn", Normalize(0, 100), values
    if kind == "mse":
        # One row per task across every panel: divide by the row's largest value.
        row_max = np.nanmax(np.where(np.isfinite(values), values, np.nan), axis=(0, 2))
        scale = np.where(np.isfinite(row_max) & (row_max > 0), row_max, 1.0)
        return "YlGnBu", Normalize(0, 1), values / scale[None, :, None]
    bound = float(max(1.0, np.abs(finite).max())) if finite.size else 1.0
    return "RdBu", TwoSlopeNorm(0.0, -bound, bound), values


def panel_heatmap(
    panels: dict[str, pl.DataFrame],
    title: str,
    path: Path,
    kind: str,
    references: list[str] | tuple[str, ...] = (),
    tags: dict[str, str] | None = None,
) -> Path:
    """One heatmap panel per entry of `panels` (panel title -> wide frame), side by side.
    The references' columns come last, italic, labelled with their tag (reference_label).

    Every frame has the row labels (task IDs) in its first column and one column per model;
    rows and models are aligned across panels (a model or task a panel lacks is grey).
    `kind` is `accuracy` (0-100), `mse` (per-task scale) or `gap` (centred at 0).
    """
    frames = [f for f in panels.values() if not f.is_empty()]
    first = frames[0].columns[0]
    labels = sorted({str(v) for f in frames for v in f[f.columns[0]].to_list()}, key=_row_key)
    models: list[str] = []
    for frame in frames:
        models += [m for m in frame.columns[1:] if m not in models]
    models = [m for m in models if m not in references] + [m for m in references if m in models]
    values = np.full((len(panels), len(labels), len(models)), np.nan)
    for p, frame in enumerate(panels.values()):
        if frame.is_empty():
            continue
        index = {str(v): i for i, v in enumerate(frame[first].to_list())}
        for c, model in enumerate(models):
            if model not in frame.columns:
                continue
            column = frame[model].cast(pl.Float64).to_numpy()
            for r, label in enumerate(labels):
                if label in index:
                    values[p, r, c] = column[index[label]]
    cmap, norm, shade = _colours(kind, values)
    numbered = len(models) <= NUMBERED_MODELS
    # Cells sized for CELL_TEXT_PT numbers (at 6 pt they were ~6 px tall; issue 39).
    narrowest = COLUMN_IN[0] if numbered else NARROW_COLUMN_IN
    across = len(panels)
    column_in = min(COLUMN_IN[1], (MAX_WIDTH_IN - 1.8 - 0.9 * across) / (across * len(models)))
    if column_in < narrowest:  # too many models to set the setups side by side
        across = 1
        column_in = max(0.3 if numbered else NARROW_COLUMN_IN,
                        min(COLUMN_IN[1], (MAX_WIDTH_IN - 2.7) / len(models)))  # fmt: skip
    down = len(panels) // across
    width = max(4.5, 1.8 + across * (column_in * len(models) + 0.9))
    # 0.3 in a task row; a stacked panel adds its title and its own model names (1.6 in, more
    # for longer names).
    names_in = 0.6 + 0.06 * max((len(m) for m in models), default=10)
    height = max(3.0, 1.6 + down * 0.3 * len(labels) + (down - 1) * max(1.6, names_in))
    fig, axes = plt.subplots(
        down, across, figsize=(width, height), sharey=across > 1, squeeze=False,
        layout="constrained",
    )  # fmt: skip
    image = None
    for p, (name, ax) in enumerate(zip(panels, axes.flat, strict=True)):
        image = ax.imshow(np.ma.masked_invalid(shade[p]), cmap=cmap, norm=norm, aspect="auto")
        ax.set_facecolor(MISSING)  # a model that did not run the task stays grey
        names = [reference_label(m, tags or {}) if m in references else m for m in models]
        # Upright names in narrow columns: at 45 degrees, 0.2 in apart, they overlapped.
        ax.set_xticks(range(len(models)), names, rotation=45 if numbered else 90,
                      ha="right" if numbered else "center", fontsize=MIN_TEXT_PT,
                      **PLAIN)  # fmt: skip
        for tick, model in zip(ax.get_xticklabels(), models, strict=True):
            tick.set_fontstyle("italic" if model in references else "normal")
        ax.set_yticks(range(len(labels)), labels, fontsize=MIN_TEXT_PT, **PLAIN)
        ax.set_title(name, fontsize=9, **PLAIN)
        shown = [m for m in models if m not in references]
        if references and shown:
            ax.axvline(len(shown) - 0.5, color="k", linestyle="--", linewidth=1)
        for (r, c), v in np.ndenumerate(values[p] if numbered else np.empty((0, 0))):
            if np.isfinite(v):
                text = f"{v:.0f}" if kind != "mse" else short_number(v)
                red, green, blue, _ = image.cmap(norm(shade[p, r, c]))
                dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5  # white on dark cells
                ax.text(c, r, text, ha="center", va="center", fontsize=CELL_TEXT_PT,
                        color="w" if dark else "k")  # fmt: skip
    assert image is not None  # at least one panel: callers pass none empty
    bar = fig.colorbar(image, ax=list(axes.flat), shrink=0.8, pad=0.01)
    bar.set_label(COLOURBAR_LABELS[kind], fontsize=MIN_TEXT_PT)
    handles = [Patch(facecolor=MISSING, edgecolor="grey", label="grey: not run")]
    if references:
        where = "right of the dashed line" if len(references) < len(models) else "all columns"
        handles.append(
            Patch(facecolor="white", edgecolor="k", linestyle="--",
                  label=f"italic, {where}: not models under test (random weights, "
                        "baselines)")
        )  # fmt: skip
    fig.legend(
        handles=handles, loc="outside lower center", fontsize=MIN_TEXT_PT, ncols=len(handles),
        frameon=False,
    )  # fmt: skip
    if not numbered:
        title += f" ({len(models)} models: the values are in the tables under the figure)"
    fig.suptitle(title, fontsize=10, **PLAIN)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def short_number(value: float) -> str:
    """A cell's number in at most 5 characters, never in exponent form (issue 50: MSE
    cells printed `1.2e+03` and overlapped): 0.05, 3.4, 87, 1.2k, 45k, 3.1M; below 0.01 `<.01`."""
    size = abs(value)
    if size == 0:
        return "0"
    if size < 0.01:
        return "<.01" if value > 0 else "-<.01"
    if size < 10:
        return f"{value:.2g}"
    if size < 1000:
        return f"{value:.0f}"
    for limit, suffix in ((1e6, "k"), (1e9, "M"), (1e12, "G")):
        if size < limit:
            scaled = value / (limit / 1000)
            return f"{scaled:.1f}{suffix}" if abs(scaled) < 10 else f"{scaled:.0f}{suffix}"
    return ">1T" if value > 0 else "<-1T"


def _row_key(label: str) -> tuple[int, str]:
    """Tasks in ID order, the gap table's `mean` row last."""
    return (1 if label == "mean" else 0, label)


def reference_label(model: str, tags: dict[str, str]) -> str:
    """A reference row's legend entry with its tag (tables.model_tags): a random-weight model
    is not a baseline (issue 39: tiny-vlm was labelled one)."""
    return f"{model} ({tags.get(model, 'baseline')})"


def gap_distribution(
    per_category: pl.DataFrame,
    path: Path,
    references: list[str] | tuple[str, ...] = (),
    key: str = "code",
    tags: dict[str, str] | None = None,
) -> Path:
    """Per category (`key` = code; Figure 2) or per task (`key` = task; Figure 7): a box
    over the models under test, and every model's gap as a point, one colour per model
    (legend); baselines as hollow grey markers, outside the box."""
    codes = sorted(per_category[key].unique().to_list())
    models = sorted(m for m in per_category["model"].unique().to_list() if m not in references)
    # 0.8 in a category, 0.45 in a task, narrowed to fit MAX_WIDTH_IN (the legend goes below).
    step = min(0.8 if key == "code" else 0.45, (MAX_WIDTH_IN - 3) / len(codes))
    fig, ax = plt.subplots(figsize=(max(6.0, step * len(codes) + 3), 4), layout="constrained")
    tested = [
        per_category.filter((pl.col(key) == c) & pl.col("model").is_in(models))["gap"].to_numpy()
        for c in codes
    ]
    if models:
        ax.boxplot(tested, positions=range(1, len(codes) + 1), showfliers=False)
    jitter = np.random.default_rng(0)  # fixed, so the same results give the same figure
    palette = plt.get_cmap("tab10")
    coloured = len(models) <= COLOURED_MODELS
    if not coloured:  # one grey dot per model under test, one legend entry for them all
        part = per_category.filter(pl.col("model").is_in(models))
        x = np.array([codes.index(c) + 1 for c in part[key].to_list()], dtype=float)
        x += jitter.uniform(-0.15, 0.15, len(x))
        ax.scatter(x, part["gap"].to_numpy(), s=10, alpha=0.6, color="#555555",
                   label=f"one dot per model under test ({len(models)}; each model's values: "
                         "the table under the figure)")  # fmt: skip
    for k, model in enumerate(
        [*(models if coloured else []), *[r for r in references if r in set(per_category["model"])]]
    ):
        part = per_category.filter(pl.col("model") == model)
        x = np.array([codes.index(c) + 1 for c in part[key].to_list()], dtype=float)
        x += jitter.uniform(-0.15, 0.15, len(x))
        if model in references:
            marker = "s^Dv"[references.index(model) % 4]  # one shape per baseline
            style: dict[str, Any] = {
                "facecolors": "none",
                "edgecolors": "dimgrey",
                "marker": marker,
            }
            label = reference_label(model, tags or {})
        else:
            style = {"color": palette(k % 10)}
            label = model
        ax.scatter(x, part["gap"].to_numpy(), s=16, alpha=0.8, label=label, **style)
    slanted = {"rotation": 60, "ha": "right", "fontsize": MIN_TEXT_PT}  # task IDs are long
    rotation: dict[str, Any] = {} if key == "code" else slanted
    ax.set_xticks(range(1, len(codes) + 1), codes, **rotation, **PLAIN)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("task category" if key == "code" else "task")
    ax.set_ylabel("accuracy(full) - accuracy(dotted), points")
    box = (
        "boxes: models under test (quartiles, whiskers 1.5 IQR)"
        if models
        else "no models under test, baselines only"
    )
    per = "category" if key == "code" else "task"
    ax.set_title(f"Full-minus-dotted gap per {per}; {box}", fontsize=9)
    # Below the plot, not beside it: beside, it widened a 25-task figure past MAX_WIDTH_IN.
    legend = fig.legend(
        fontsize=MIN_TEXT_PT, loc="outside lower center",
        ncols=min(4 if coloured else 2, len(ax.collections)), frameon=False,
    )  # fmt: skip
    for text in legend.get_texts():
        text.set(**PLAIN)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def transfer_heatmap(panels: dict[str, pl.DataFrame], title: str, path: Path) -> Path:
    """The probe transfer matrix (the paper's Figure 8): one panel per config and test
    images, rows the training task, columns the test task, colour the accuracy (0-100).

    Every frame has the training task in its first column and one column per test task.
    Panels go in a grid of at most four per row, so eight configs x images stay readable."""
    frames = list(panels.values())
    rows_of = sorted({str(v) for f in frames for v in f[f.columns[0]].to_list()})
    columns: list[str] = []
    for frame in frames:
        columns += [c for c in frame.columns[1:] if c not in columns]
    side = 1.2 + 0.42 * max(len(rows_of), len(columns))
    # As many panels a row as fit MAX_WIDTH_IN (at most four), at least one.
    across = max(1, min(4, len(panels), int((MAX_WIDTH_IN - 1.2) // side)))
    down = -(-len(panels) // across)
    fig, axes = plt.subplots(
        down, across, figsize=(across * side + 1.2, down * side + 0.8), squeeze=False,
        layout="constrained",
    )  # fmt: skip
    norm = Normalize(0, 100)
    image = None
    for ax, (name, frame) in zip(axes.flat, panels.items(), strict=False):
        index = {str(v): i for i, v in enumerate(frame[frame.columns[0]].to_list())}
        values = np.full((len(rows_of), len(columns)), np.nan)
        for c, column in enumerate(columns):
            if column in frame.columns:
                data = frame[column].cast(pl.Float64).to_numpy()
                for r, label in enumerate(rows_of):
                    if label in index:
                        values[r, c] = data[index[label]]
        image = ax.imshow(np.ma.masked_invalid(values), cmap="RdYlGn", norm=norm, aspect="auto")
        ax.set_facecolor(MISSING)
        ax.set_xticks(range(len(columns)), columns, rotation=60, ha="right", fontsize=MIN_TEXT_PT,
                      **PLAIN)  # fmt: skip
        ax.set_yticks(range(len(rows_of)), rows_of, fontsize=MIN_TEXT_PT, **PLAIN)
        ax.set_title(name, fontsize=9, **PLAIN)
        ax.set_xlabel("test task", fontsize=MIN_TEXT_PT)
        ax.set_ylabel("training task", fontsize=MIN_TEXT_PT)
        for (r, c), v in np.ndenumerate(values):
            if np.isfinite(v):
                red, green, blue, _ = image.cmap(norm(v))
                dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
                ax.text(c, r, f"{v:.0f}", ha="center", va="center", fontsize=CELL_TEXT_PT,
                        color="w" if dark else "k")  # fmt: skip
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    assert image is not None  # callers pass at least one panel
    bar = fig.colorbar(image, ax=list(axes.flat), shrink=0.8, pad=0.01)
    bar.set_label("accuracy (%)", fontsize=MIN_TEXT_PT)
    fig.suptitle(title, fontsize=10, **PLAIN)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path
