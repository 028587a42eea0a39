"""`python -m pipelines report RESULTS --out DIR`: the tables and figures a paper would show.

Reads RESULTS/noregeo (Tables 2-3, heatmaps, MSE, gaps, pair consistency, intervals, invalid
rates; the model `human` from `human-import` appears as a row), RESULTS/geobuild, and
RESULTS/probes (Tables 4-5), plus an optional solver audit (`--audit audit.csv`). Writes
DIR/index.html (static, no network assets), DIR/figures/*.png and DIR/tables/*.{csv,md}.
A part with no results becomes a section that says so. docs/report.md explains each part.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import time
from pathlib import Path

import polars as pl

from pipelines.cli_args import existing_file, output_dir, percent, read_utf8, results_location
from pipelines.noregeo.summarize import load_results, missing_rows
from pipelines.report import tables as rt
from pipelines.report.figures import gap_distribution, heatmap
from pipelines.report.html_page import Figure, Section, Table, write_report
from store.errors import UsageError
from store.storage import Location

# The audit.csv columns (geobuild_solve.AUDIT_COLUMNS) that the audit section reads.
AUDIT_NEEDS = ("id", "status", "conflicts", "reason", "seconds")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `report` command's options."""
    parser.add_argument(
        "results", type=results_location, help="results directory or URI (evaluate/geobuild/probe)"
    )
    parser.add_argument("--out", type=output_dir, required=True, help="report directory")
    parser.add_argument("--audit", type=existing_file, help="audit.csv of `geobuild-solve`")
    parser.add_argument(
        "--min-accuracy", type=percent, default=70.0, help="probe Table 5 threshold (%%)"
    )


def run(args: argparse.Namespace) -> int:
    """Build the HTML report and its tables and figures; the exit code."""
    check_out(args.results, args.out)
    audit = read_audit(args.audit) if args.audit is not None else None
    index = build_report(args.results, args.out, audit, args.min_accuracy)
    print(index)
    return 0


def check_out(results: Location, out: Path) -> None:
    """--out is replaced whole, so it must be new, empty or an earlier report, and must
    not hold RESULTS."""
    inside = isinstance(results, Path) and (
        out.resolve() == results.resolve() or out.resolve() in results.resolve().parents
    )
    if inside:
        raise UsageError(f"--out {out} would replace the results in {results}; give a new folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "index.html").is_file():
        raise UsageError(f"--out {out} holds files and no report (no index.html); give a new one")


def read_audit(path: Path) -> pl.DataFrame:
    """geobuild-solve's audit.csv; not UTF-8, not CSV or lacking its columns is a UsageError."""
    text = read_utf8(path, "--audit")
    try:
        frame = pl.read_csv(
            io.BytesIO(text.encode()), schema_overrides={"id": pl.String, "conflicts": pl.String}
        )
    except pl.exceptions.PolarsError as err:
        raise UsageError(f"--audit {path} is not a readable CSV: {err}") from err
    missing = [c for c in AUDIT_NEEDS if c not in frame.columns]
    if missing:
        raise UsageError(f"--audit {path} lacks column(s) {', '.join(missing)}; is it audit.csv?")
    try:
        return frame.with_columns(pl.col("seconds").cast(pl.Float64, strict=True))
    except pl.exceptions.PolarsError as err:
        raise UsageError(f"--audit {path}: column seconds is not numeric") from err


def build_report(
    results: Location, out: Path, audit: pl.DataFrame | None = None, min_accuracy: float = 70.0
) -> Path:
    """Writes the whole report under `out`; returns the path of index.html.

    The report is built in a hidden sibling folder and renamed to `out` only when complete,
    so a crash leaves the previous report (or none), never half of one."""
    out = out.resolve()  # `--out .` has no name to make a sibling from
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "figures").mkdir(parents=True)
    try:
        _write_report(results, staging, audit, min_accuracy)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap_in(staging, out)
    return out / "index.html"


def _swap_in(staging: Path, out: Path) -> None:
    """Put `staging` where `out` is: the old report is moved aside first, removed last."""
    if not out.exists():
        staging.rename(out)
        return
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    shutil.rmtree(old, ignore_errors=True)
    out.rename(old)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _write_report(
    results: Location, out: Path, audit: pl.DataFrame | None, min_accuracy: float
) -> Path:
    try:
        df = load_results(results)
    except UsageError as err:
        df, missing = None, str(err)
    sections = (
        noregeo_sections(df, out) + missing_section(results, df)
        if df is not None
        else [Section("NoReGeo", "Accuracy of models on the NoReGeo items.", empty=missing)]
    )
    sections += [
        geobuild_section(results),
        audit_section(audit),
        *probe_sections(results, min_accuracy),
    ]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    subtitle = f"Results from {results.resolve()}, report written {stamp}."
    return write_report(out, "NoReGeo and GeoBuild report", subtitle, sections)


def _tables(name: str, title: str, frame: pl.DataFrame, note: str = "") -> list[Table | Figure]:
    return [Table(name, title, frame, note)] if not frame.is_empty() else []


def missing_section(results: Location, df: pl.DataFrame) -> list[Section]:
    """Rows the recorded runs expected and the results lack (a killed run, a quarantined
    shard), so a smaller n never passes unnoticed; no section when none are missing."""
    missing = missing_rows(results, df).filter(pl.col("missing") > 0)
    if missing.is_empty():
        return []
    return [
        Section(
            "NoReGeo: missing rows",
            "Rows the recorded runs expected but the results do not hold, per model, task and "
            "setup; the tables above count only the rows present. Rerun the same evaluate "
            "command to fill them in.",
            _tables("missing_rows", "Missing rows", missing),
        )
    ]


def noregeo_sections(df: pl.DataFrame, out: Path) -> list[Section]:
    """Every NoReGeo section, in the order of the paper."""
    setups = rt.setup_order(df)
    human = " The row `human` is the majority vote of annotators (human-import)."
    human = human if rt.HUMAN in df["model"].unique().to_list() else ""
    overview = Section(
        "NoReGeo: overall accuracy per model and setup",
        "Accuracy (%) over all items, 95% bootstrap interval, invalid-output rate (%)." + human,
        _tables("overall", "Accuracy per model and setup", rt.intervals(df, ["model", "setup"])),
    )
    table2 = Section(
        "Table 2: accuracy per category, setup and model",
        "Columns are kind-category (C: classification, N: numeric, U: unstable; the category "
        "code is the middle of the task ID). Cells: accuracy (%) over the group's items." + human,
        _tables("table2", "Table 2 (accuracy, %)", rt.table2(df)),
    )
    long3 = rt.table3_long(df)
    table3 = Section(
        "Table 3: mean ± std across models",
        "Per category and setup: mean and sample standard deviation (ddof=1) across models of "
        "each model's category accuracy (%); `human` is not counted as a model.",
        _tables("table3", "Table 3 (mean ± std, %)", rt.table3(long3))
        + _tables("table3_long", "Table 3 as numbers, with the model count", long3),
    )
    acc_blocks: list[Table | Figure] = []
    mse_blocks: list[Table | Figure] = []
    for setup in setups:
        title = rt.SETUP_TITLES[setup]
        acc = rt.task_by_model(df, setup, "accuracy")
        acc_blocks += _tables(f"accuracy_tasks_{setup}", f"Accuracy (%), {title}", acc)
        if not acc.is_empty():
            path = heatmap(
                acc, f"Accuracy (%), {title}", out / f"figures/accuracy_{setup}.png", "accuracy"
            )
            acc_blocks.append(Figure(f"figures/{path.name}", f"Accuracy heatmap, {title}"))
        mse = rt.task_by_model(df, setup, "mse")
        mse_blocks += _tables(f"mse_tasks_{setup}", f"MSE on numeric tasks, {title}", mse)
        if not mse.is_empty():
            path = heatmap(
                mse, f"MSE (valid answers), {title}", out / f"figures/mse_{setup}.png", "mse"
            )
            mse_blocks.append(Figure(f"figures/{path.name}", f"MSE heatmap, {title}"))
    heatmaps = Section(
        "Accuracy heatmaps: tasks x models, one per setup",
        "Green is high accuracy, red low; grey: the model did not run that task.",
        acc_blocks,
    )
    mse_section = Section(
        "MSE on numeric tasks",
        "Mean squared error of valid number and point answers (points: mean of dx² and dy²); "
        "invalid outputs are excluded here and counted as wrong in accuracy. Log colour scale.",
        mse_blocks,
        empty="no numeric-task results",
    )
    return [
        overview,
        table2,
        table3,
        heatmaps,
        mse_section,
        gap_section(df, out),
        Section(
            "U-task pair consistency",
            "Unstable tasks come in pairs one grid step apart with different answers; a pair "
            "counts only when both items are right (%).",
            _tables("pair_consistency", "Pair consistency (%)", rt.pair_table(df)),
            empty="no paired (U-task) results",
        ),
        Section(
            "Bootstrap 95% intervals per category",
            "Percentile bootstrap over items (1000 resamples, seed 0) of each model's accuracy "
            "per category and setup.",
            _tables(
                "intervals_category",
                "Accuracy (%) with 95% interval, per model, category and setup",
                rt.intervals(df, ["model", "category", "setup"]),
            ),
        ),
        Section(
            "Invalid-output rates",
            "Share (%) of outputs that are not valid JSON with the answer's keys (scored wrong).",
            _tables("invalid_rates", "Invalid-output rate (%)", rt.invalid_rates(df)),
        ),
    ]


def gap_section(df: pl.DataFrame, out: Path) -> Section:
    """Full-minus-dotted gaps: the task x model heatmap and the per-category distribution."""
    section = Section(
        "Full minus dotted images",
        "Accuracy(full) - accuracy(dotted) in points for models that ran both setups: blue, "
        "full images help; red, they hurt. The last heatmap row is the mean over tasks.",
        empty="no model has both dotted and full results",
    )
    gap = rt.gap_by_task(df)
    if gap.is_empty():
        return section
    section.blocks += _tables("gap_tasks", "Gap per task and model (points)", gap)
    path = heatmap(gap, "Accuracy(full) - accuracy(dotted)", out / "figures/gap_tasks.png", "gap")
    section.blocks.append(Figure(f"figures/{path.name}", "Gap heatmap, tasks x models"))
    per_category = rt.gap_by_category(df)
    section.blocks += _tables("gap_categories", "Gap per category and model", per_category)
    section.blocks += _tables(
        "gap_category_summary", "Gap distribution per category", rt.gap_summary(per_category)
    )
    path = gap_distribution(per_category, out / "figures/gap_categories.png")
    section.blocks.append(Figure(f"figures/{path.name}", "Gap per category (box and points)"))
    return section


def geobuild_section(results: Location) -> Section:
    """GeoBuild success, rounds, error categories, missing objects and failed conditions."""
    section = Section(
        "GeoBuild",
        "Success rate over every attempted problem, mean rounds to success, mean partial score "
        "(0.3 objects + 0.7 conditions); error categories, missing objects and failed "
        "conditions of each problem's final round.",
    )
    from pipelines.geobuild.summarize import summary_tables

    try:
        tables = summary_tables(results)
    except UsageError as err:
        section.empty = str(err)
        return section
    titles = {
        "overall": "Success and rounds per model",
        "by_category": "Per problem category",
        "by_difficulty": "Per difficulty",
        "error_categories": "Final-round error categories",
        "missing_objects": "Missing objects by type (final round)",
        "failed_conditions": "Failed conditions by type (final round)",
    }
    for name, title in titles.items():
        section.blocks += _tables(f"geobuild_{name}", title, tables[name])
    section.empty = "the GeoBuild results hold no rows"
    return section


def audit_section(frame: pl.DataFrame | None) -> Section:
    """Counts of the solver's constructibility audit and the problems it could not solve."""
    section = Section(
        "GeoBuild solver audit",
        "Least-squares constructibility audit of the data set (geobuild-solve): how many "
        "problems have a construction, and which conditions conflict where none was found.",
        empty="no audit given (report --audit DIR/audit.csv)",
    )
    if frame is None:
        return section
    counts = frame.group_by("status").agg(
        pl.len().alias("problems"),
        pl.col("seconds").median().alias("median_seconds"),
    )
    counts = counts.with_columns(
        (pl.col("problems") / frame.height * 100).round(1).alias("share")
    ).sort("problems", descending=True)
    conflicts = (
        frame.select(pl.col("conflicts").str.split(" | ").explode())
        .drop_nulls()
        .filter(pl.col("conflicts") != "")
        .select(pl.col("conflicts").str.extract(r"^(\w+)").alias("condition_type"))
        .group_by("condition_type")
        .len("count")
        .sort("count", "condition_type", descending=[True, False])
    )
    unsolved = frame.filter(pl.col("status") != "solved").select(
        "id", "status", "conflicts", "reason"
    )
    section.blocks += _tables("audit_status", "Audit status counts", counts)
    section.blocks += _tables("audit_conflicts", "Conflicting condition types", conflicts)
    section.blocks += _tables("audit_unsolved", "Problems without a construction", unsolved)
    return section


def probe_sections(results: Location, min_accuracy: float = 70.0) -> list[Section]:
    """Paper Tables 4-5 per probed encoder."""
    intro = (
        "Linear probes on vision encoders (paper Appendix B). Table 4: accuracy (%) per "
        "training regime and config (U/F: unfrozen/frozen; F/D: full/dot training images), "
        "tested on full (F) and dot (D) images. Table 5: cross-task transfers at or above "
        f"{min_accuracy:g}%."
    )
    from probes.tables import summarize

    if not isinstance(results, Path):
        return [Section("Probes (Tables 4-5)", intro, empty="probes write local folders only")]
    try:
        tables = summarize(results, min_accuracy)
    except FileNotFoundError as err:
        return [Section("Probes (Tables 4-5)", intro, empty=str(err))]
    sections = []
    for encoder, parts in tables.items():
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder)
        none = "" if not parts["table5"].is_empty() else f"No transfer reaches {min_accuracy:g}%."
        blocks = _tables(f"probe_table4_{slug}", f"Table 4, {encoder}", parts["table4"], none)
        blocks += _tables(f"probe_table5_{slug}", f"Table 5, {encoder}", parts["table5"])
        section = Section(f"Probes: {encoder}", intro, blocks)
        section.empty = f"no probe accuracies for {encoder}"
        sections.append(section)
    return sections
