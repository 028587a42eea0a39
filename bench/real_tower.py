"""A trained tower against the same tower with random weights, per probe task (issue 52).

    .venv/bin/python bench/real_tower.py [RESULTS]      (default out/real-tower; `make real-tower`)

Reads the probe trials `make real-tower` wrote (configs/probes/real-tower.yaml, run on
`imagenet:mobilenet_v2` with `imagenet1k-v1` and with `none`) and prints, per config and
test task, each encoder's accuracy on full (F) and dotted (D) test images beside the paper's
CLIP ViT-B/32 probe (NoReGeo Table 4, joint probe "All", same config), and a verdict:
"above chance" when an accuracy is at least two binomial standard deviations above 0.5 at its
test size, else "near chance"; and whether the trained tower beats the random one by more
than the two accuracies' combined noise. The point is the direction, not the paper's numbers:
its CLIP probes reach 97% (UF) / 93% (FF) on full images and 58-61% on dotted ones.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import polars as pl

ARCH = "imagenet:mobilenet_v2"
TRAINED = "imagenet1k-v1"
RANDOM = ("none", "random")
# NoReGeo Table 4, rows "All" (one probe for the eight tasks): accuracy % on full / dotted
# test images, per config and task.
PAPER_ALL: dict[str, dict[str, tuple[float, float]]] = {
    "FF": {
        "C-BCT-CT": (98.0, 57.0),
        "U-CPR-CDT": (100.0, 54.0),
        "U-SCP-STT": (96.0, 54.0),
        "U-PAP-PLT": (85.0, 80.0),
        "U-PAP-PT": (68.0, 66.0),
        "U-PAP-RAT": (100.0, 78.0),
        "C-SYM-SST": (100.0, 49.0),
        "U-SYM-ST": (94.0, 53.0),
    },
    "UF": {
        "C-BCT-CT": (98.0, 50.0),
        "U-CPR-CDT": (100.0, 52.0),
        "U-SCP-STT": (100.0, 48.0),
        "U-PAP-PLT": (94.0, 77.0),
        "U-PAP-PT": (93.0, 61.0),
        "U-PAP-RAT": (100.0, 68.0),
        "C-SYM-SST": (100.0, 67.0),
        "U-SYM-ST": (94.0, 46.0),
    },
}


def chance_margin(n: int) -> float:
    """Two binomial standard deviations of a coin-flip accuracy on `n` balanced figures."""
    return 2 * math.sqrt(0.25 / n) if n else 1.0


def load_rows(results: Path) -> pl.DataFrame:
    """This tower's result rows under `results`/probes, with `weights` trained or random."""
    files = sorted((results / "probes").rglob("trial-*.parquet"))
    if not files:
        raise SystemExit(f"no probe trials under {results}/probes: run `make real-tower` first")
    rows = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
    rows = rows.filter(pl.col("arch") == ARCH)
    return rows.with_columns(
        weights=pl.when(pl.col("pretrained") == TRAINED)
        .then(pl.lit("trained"))
        .when(pl.col("pretrained").is_in(RANDOM))
        .then(pl.lit("random"))
        .otherwise(pl.col("pretrained"))
    )


def compare(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (config, train_tasks, eval_task, eval_setup): trained and random accuracy,
    the test size, the chance margin, and the verdicts."""
    keys = ["config", "train_tasks", "eval_task", "eval_setup"]
    acc = rows.pivot(on="weights", index=keys, values="accuracy", aggregate_function="mean")
    n = rows.group_by(keys).agg(pl.col("n").min())
    table = acc.join(n, on=keys)
    for weights in ("trained", "random"):
        if weights not in table.columns:
            table = table.with_columns(pl.lit(None, dtype=pl.Float64).alias(weights))
    margin = pl.col("n").map_elements(chance_margin, return_dtype=pl.Float64)
    # The difference of two independent accuracies has sqrt(2) times one's noise.
    return table.with_columns(margin=margin).with_columns(
        trained_above=pl.col("trained") >= 0.5 + pl.col("margin"),
        random_above=pl.col("random") >= 0.5 + pl.col("margin"),
        trained_beats=pl.col("trained") - pl.col("random") >= math.sqrt(2) * pl.col("margin"),
    )


def _pct(value: object) -> str:
    """An accuracy (a float, or polars' mean of a column) as a whole percentage."""
    return "  -" if not isinstance(value, int | float) else f"{100 * value:3.0f}"


def report(table: pl.DataFrame) -> list[str]:
    """The printed lines: a table per config and probe, then what is and is not above chance."""
    lines = []
    for (config, label), part in table.sort(["config", "train_tasks"]).group_by(
        ["config", "train_tasks"], maintain_order=True
    ):
        paper = PAPER_ALL.get(str(config), {}) if label == "All" else {}
        n = min(part["n"].to_list())
        lines.append(
            f"\n{config} probe {label}: accuracy % (n = {n} per cell; chance band 50 ± "
            f"{100 * chance_margin(n):.0f})"
        )
        header = f"{'task':10} {'setup':5} {'paper CLIP':>10} {'trained':>8} {'random':>7}"
        lines.append(f"{header}  verdict")
        for row in part.sort(["eval_task", "eval_setup"], descending=[False, True]).iter_rows(
            named=True
        ):
            ref = paper.get(row["eval_task"])
            paper_pct = "" if ref is None else f"{ref[0 if row['eval_setup'] == 'F' else 1]:.0f}"
            verdict = (
                "trained above chance" if row["trained_above"] else "trained near chance"
            ) + ("; beats random" if row["trained_beats"] else "; does NOT beat random")
            if row["random_above"]:
                verdict += "; random above chance too"
            lines.append(
                f"{row['eval_task']:10} {row['eval_setup']:5} {paper_pct:>10} "
                f"{_pct(row['trained']):>8} {_pct(row['random']):>7}  {verdict}"
            )
        for setup in ("F", "D"):
            one = part.filter(pl.col("eval_setup") == setup)
            lines.append(
                f"{'mean':10} {setup:5} {'':>10} {_pct(one['trained'].mean()):>8} "
                f"{_pct(one['random'].mean()):>7}"
            )
    beaten = table.filter(~pl.col("trained_beats")).select("eval_task", "eval_setup").sort("*")
    not_in = ", ".join(f"{task}/{setup}" for task, setup in beaten.iter_rows()) or "none"
    lines.append(
        f"\ntrained beats random in {table.height - beaten.height} of {table.height} cells; "
        f"not in: {not_in}"
    )
    return lines


def main() -> None:
    """Print the trained-vs-random table of a `make real-tower` results folder."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", nargs="?", type=Path, default=Path("out/real-tower"))
    args = parser.parse_args()
    rows = load_rows(args.results)
    if rows.is_empty():
        sys.exit(f"no {ARCH} trials under {args.results}/probes")
    print("\n".join(report(compare(rows))))


if __name__ == "__main__":
    main()
