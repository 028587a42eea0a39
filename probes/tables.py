"""Probe result tables laid out like the paper's Table 4 (accuracy) and Table 5 (transfer).

Accuracies are percentages. Table 4 rows are (training regime, config): "All" is the joint
probe, "Separate" uses, for each task column, the probe trained on that task alone, and
"Shuffled labels" the same per-task probe trained on permuted labels (the grid's chance-level
control; not in the paper). AllF / AllD average the task columns. Table 5 lists, per
(train task, test task) pair with train != test, the configs whose accuracy reaches
`min_accuracy`, each tested on full and dot images.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from probes.data import PROBE_TASKS, SETUP_OF_SUBSCRIPT
from probes.grid import JOINT, result_files

CONFIG_ORDER = ("UF", "FF", "UD", "FD")
REGIME_LABELS = {"joint": "All", "separate": "Separate", "shuffled": "Shuffled labels"}


def load_results(out: Path) -> pl.DataFrame:
    """Every trial row under `out`/probes, with `encoder` = arch/pretrained (+ /ln_post)."""
    files = result_files(out)
    if not files:
        raise FileNotFoundError(f"no probe results under {out / 'probes'}; run `probe` first")
    df = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
    if "token_norm" not in df.columns:
        df = df.with_columns(pl.lit(None, dtype=pl.String).alias("token_norm"))
    # Rows written before token_norm existed read ln_post tokens. The paper's choice (none)
    # keeps the plain label; ln_post probes are another encoder in the tables.
    norm = pl.col("token_norm").fill_null("ln_post")
    suffix = pl.when(norm == "ln_post").then(pl.lit("/ln_post")).otherwise(pl.lit(""))
    return df.with_columns(
        norm.alias("token_norm"),
        (pl.col("arch") + "/" + pl.col("pretrained") + suffix).alias("encoder"),
        (pl.col("accuracy") * 100).alias("acc"),
    )


def _task_order(tasks: list[str]) -> list[str]:
    return [t for t in PROBE_TASKS if t in tasks]


def table4(df: pl.DataFrame) -> pl.DataFrame:
    """Rows (Train DS, Config); columns AllF, AllD, then <task>F / <task>D."""
    joint = df.filter(pl.col("regime") == "joint")
    separate = df.filter(
        pl.col("regime").is_in(["separate", "shuffled"])
        & (pl.col("train_tasks") == pl.col("eval_task"))
    )
    cells = pl.concat([joint, separate]).select(
        pl.col("regime").replace_strict(REGIME_LABELS).alias("Train DS"),
        pl.col("config").alias("Config"),
        (pl.col("eval_task") + pl.col("eval_setup")).alias("column"),
        pl.col("eval_task"),
        pl.col("eval_setup"),
        pl.col("acc"),
    )
    if cells.is_empty():
        return pl.DataFrame()
    tasks = _task_order(cells["eval_task"].unique().to_list())
    means = cells.group_by("Train DS", "Config", "eval_setup").agg(pl.col("acc").mean())
    means = means.with_columns(("All" + pl.col("eval_setup")).alias("column"))
    long = pl.concat([cells.select(means.columns), means]).select(
        "Train DS", "Config", "column", "acc"
    )
    wide = long.pivot(on="column", index=["Train DS", "Config"], values="acc")
    subscripts = list(SETUP_OF_SUBSCRIPT)  # F, D
    columns = [f"All{s}" for s in subscripts] + [f"{t}{s}" for t in tasks for s in subscripts]
    wide = wide.select("Train DS", "Config", *[c for c in columns if c in wide.columns])
    order = {
        (r, c): i
        for i, (r, c) in enumerate((r, c) for r in REGIME_LABELS.values() for c in CONFIG_ORDER)
    }
    return (
        wide.with_columns(
            pl.struct("Train DS", "Config")
            .map_elements(
                lambda s: order.get((s["Train DS"], s["Config"]), 99), return_dtype=pl.Int64
            )
            .alias("_order")
        )
        .sort("_order")
        .drop("_order")
    )


def transfer_matrix(df: pl.DataFrame) -> pl.DataFrame:
    """Long table: train task, test task, config, test setup, accuracy (separate probes)."""
    return (
        df.filter((pl.col("regime") == "separate") & (pl.col("train_tasks") != JOINT))
        .select(
            pl.col("train_tasks").alias("Train Dataset"),
            pl.col("eval_task").alias("Eval Dataset"),
            pl.col("config").alias("Config"),
            pl.col("eval_setup").alias("Eval Setup"),
            pl.col("acc").alias("Accuracy"),
        )
        .sort("Train Dataset", "Eval Dataset", "Config", "Eval Setup")
    )


def transfer_panels(transfer: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The transfer matrix (from transfer_matrix) as the paper's Figure 8 draws it: one
    train task x test task table of accuracies per config and test images, keyed
    `<config>, <full|dotted> test images`; tasks in PROBE_TASKS order."""
    panels: dict[str, pl.DataFrame] = {}
    if transfer.is_empty():
        return panels
    tasks = _task_order(
        transfer["Train Dataset"].unique().to_list() + transfer["Eval Dataset"].unique().to_list()
    )
    rank = {t: i for i, t in enumerate(tasks)}
    subscripts = list(SETUP_OF_SUBSCRIPT)  # F then D, as Table 4's columns
    configs = sorted(
        transfer.select("Config", "Eval Setup").unique().iter_rows(),
        key=lambda k: (
            CONFIG_ORDER.index(k[0]) if k[0] in CONFIG_ORDER else 99,
            subscripts.index(k[1]) if k[1] in subscripts else 99,
            k,
        ),
    )
    for config, setup in configs:
        part = transfer.filter((pl.col("Config") == config) & (pl.col("Eval Setup") == setup))
        wide = part.pivot(on="Eval Dataset", index="Train Dataset", values="Accuracy")
        wide = wide.sort(pl.col("Train Dataset").replace_strict(rank, default=99))
        present = [t for t in tasks if t in wide.columns]
        name = f"{config}, {SETUP_OF_SUBSCRIPT.get(setup, setup)} test images"
        panels[name] = wide.select("Train Dataset", *present)
    return panels


def table5(df: pl.DataFrame, min_accuracy: float = 70.0) -> pl.DataFrame:
    """Paper Table 5: train task -> test task -> "UD/F (75.0), FF/D (71.0)" (acc >= min)."""
    cross = transfer_matrix(df).filter(
        (pl.col("Train Dataset") != pl.col("Eval Dataset")) & (pl.col("Accuracy") >= min_accuracy)
    )
    schema = {
        "Train Dataset": pl.String,
        "Eval Dataset": pl.String,
        "Configs with Accuracy": pl.String,
    }
    if cross.is_empty():
        return pl.DataFrame(schema=schema)
    return (
        cross.sort("Accuracy", descending=True)
        .group_by("Train Dataset", "Eval Dataset", maintain_order=True)
        .agg(
            pl.format(
                "{} ({})",
                pl.col("Config") + "/" + pl.col("Eval Setup"),
                pl.col("Accuracy").round(1),
            )
            .str.join(", ")
            .alias("Configs with Accuracy")
        )
        .sort("Train Dataset", "Eval Dataset")
    )


def summarize(out: Path, min_accuracy: float = 70.0) -> dict[str, dict[str, pl.DataFrame]]:
    """{encoder: {"table4": ..., "table5": ..., "transfer": ...}} for every encoder probed."""
    df = load_results(out)
    tables: dict[str, dict[str, pl.DataFrame]] = {}
    for encoder in sorted(df["encoder"].unique().to_list()):
        part = df.filter(pl.col("encoder") == encoder)
        tables[encoder] = {
            "table4": table4(part),
            "table5": table5(part, min_accuracy),
            "transfer": transfer_matrix(part),
        }
    return tables
