"""Report figures (matplotlib, Agg): task x model heatmaps and full-minus-dotted gap plots.

Colours follow the paper's appendix: accuracy red (low) to green (high); MSE green (low) to
blue (high), on a log scale because a random model's errors are orders of magnitude above a
good one's; gaps blue where full images help and red where they hurt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.colors import LogNorm, Normalize, TwoSlopeNorm  # noqa: E402

DPI = 110
# Labels are model names and task IDs, not maths: `$` must stay a dollar sign (a name like
# `a$\frac{$b` made mathtext raise), and TeX must never see them.
PLAIN: dict[str, Any] = {"parse_math": False, "usetex": False}


def _size(rows: int, cols: int) -> tuple[float, float]:
    return (max(4.0, 2.2 + 0.75 * cols), max(2.5, 1.2 + 0.32 * rows))


def heatmap(wide: pl.DataFrame, title: str, path: Path, kind: str) -> Path:
    """Rows = first column's labels, columns = the other columns; values written in cells.

    `kind` is `accuracy` (0-100), `mse` (log colour scale) or `gap` (centred at 0).
    """
    labels = [str(v) for v in wide[wide.columns[0]].to_list()]
    models = wide.columns[1:]
    values = wide.select(models).to_numpy().astype(float)
    finite = values[np.isfinite(values)]
    norm: Normalize
    if kind == "accuracy":
        cmap, norm = "RdYlGn", Normalize(0, 100)
    elif kind == "mse":
        positive = finite[finite > 0]
        low = float(positive.min()) if positive.size else 1e-3
        high = float(max(positive.max(), low * 10)) if positive.size else 1.0
        cmap, norm = "YlGnBu", LogNorm(low, high)
        values = np.where(values <= 0, low, values)  # exact answers: the best colour
    else:
        bound = float(max(1.0, np.abs(finite).max())) if finite.size else 1.0
        cmap, norm = "RdBu", TwoSlopeNorm(0.0, -bound, bound)
    fig, ax = plt.subplots(figsize=_size(len(labels), len(models)))
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
    ax.set_facecolor("#dddddd")  # missing cells (model did not run the task) stay grey
    ax.set_xticks(range(len(models)), models, rotation=45, ha="right", fontsize=8, **PLAIN)
    ax.set_yticks(range(len(labels)), labels, fontsize=8, **PLAIN)
    shown = wide.select(models).to_numpy().astype(float)
    for (r, c), v in np.ndenumerate(shown):
        if np.isfinite(v):
            text = f"{v:.0f}" if kind != "mse" else f"{v:.3g}"
            red, green, blue, _ = image.cmap(norm(values[r, c]))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5  # white text on dark cells
            ax.text(c, r, text, ha="center", va="center", fontsize=7, color="w" if dark else "k")
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(title, fontsize=10, **PLAIN)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def gap_distribution(per_category: pl.DataFrame, path: Path) -> Path:
    """Box plot of per-model gaps per category, every model's gap drawn as a point."""
    codes = sorted(per_category["code"].unique().to_list())
    groups = [per_category.filter(pl.col("code") == c)["gap"].to_numpy() for c in codes]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(codes) + 2), 4))
    ax.boxplot(groups, showfliers=False)
    ax.set_xticks(range(1, len(codes) + 1), codes, **PLAIN)
    jitter = np.random.default_rng(0)  # fixed, so the same results give the same figure
    for i, gaps in enumerate(groups, start=1):
        ax.scatter(i + jitter.uniform(-0.15, 0.15, len(gaps)), gaps, s=12, alpha=0.7)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_ylabel("accuracy(full) - accuracy(dotted), points")
    ax.set_title("Full-minus-dotted gap per task category (one point per model)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
