"""`python -m pipelines report RESULTS --out DIR`: the tables and figures a paper would show.

Reads the run records (provenance: items, models, settings, software), RESULTS/noregeo
(Tables 2-3, task figures with the setups side by side, MSE, gaps, pair consistency,
intervals, engine-error and invalid-output rates; `human` from `human-import` and the
baselines appear as marked rows, outside every across-model statistic), RESULTS/geobuild,
the solver audit (RESULTS/audit/audit.csv, or `--audit FILE`) and RESULTS/probes (Tables
4-5). Writes DIR/index.html and DIR/samples.html (static, no network assets),
DIR/figures/*.png, DIR/samples/*.png and DIR/tables/*.{csv,md}. A part with no results
becomes a section that says so. docs/report.md explains each part.
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
from pipelines.noregeo.summarize import answered, load_results, missing_rows
from pipelines.report import provenance as prov
from pipelines.report import tables as rt
from pipelines.report.figures import gap_distribution, panel_heatmap
from pipelines.report.html_page import Block, Figure, Heading, Section, Table, write_report
from pipelines.report.provenance import Record, run_records
from pipelines.report.samples import samples_page
from store.errors import UsageError
from store.storage import Location

# The audit.csv columns (geobuild_solve.AUDIT_COLUMNS) that the audit section reads.
AUDIT_NEEDS = ("id", "status", "conflicts", "reason", "seconds")
# Where `geobuild-solve --out RESULTS` leaves its audit; the report reads it from there.
AUDIT_PATH = "audit/audit.csv"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `report` command's options."""
    parser.add_argument(
        "results", type=results_location, help="results directory or URI (evaluate/geobuild/probe)"
    )
    parser.add_argument("--out", type=output_dir, required=True, help="report directory")
    parser.add_argument(
        "--audit",
        type=existing_file,
        help=f"audit.csv of `geobuild-solve` (default: RESULTS/{AUDIT_PATH} when present)",
    )
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
    records = run_records(results)
    try:
        df = load_results(results)
    except UsageError as err:
        df, missing = None, str(err)
    sections = [provenance_section(records)]
    links = ""
    if df is not None:
        sections += noregeo_sections(df, out) + missing_section(results, df)
        samples_page(df, records, out)
        links = (
            '<p><a href="samples.html">Sample browser</a>: a few items per task and setup '
            "with their image, prompt, each model's output, the gold answer and the verdict; "
            "filter by task, setup and model.</p>"
        )
    else:
        sections.append(
            Section("NoReGeo", "Accuracy of models on the NoReGeo items.", empty=missing)
        )
    if audit is None:
        audit, audit_note = found_audit(results)
    else:
        audit_note = ""
    sections += [
        geobuild_section(results),
        audit_section(audit, audit_note),
        *probe_sections(results, min_accuracy),
    ]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    subtitle = f"Results from {results.resolve()}, report built {stamp}."
    return write_report(out, "NoReGeo and GeoBuild report", subtitle, sections, links)


def _tables(
    name: str,
    title: str,
    frame: pl.DataFrame,
    note: str = "",
    folded: bool | None = None,
    references: list[str] | tuple[str, ...] = (),
) -> list[Block]:
    if frame.is_empty():
        return []
    return [Table(name, title, frame, note, folded, tuple(references))]


def provenance_section(records: list[Record]) -> Section:
    """Where the numbers come from: items, models and settings, commits, packages."""
    section = Section(
        "Provenance: items, models, settings, software",
        "Read from the run records (RESULTS/<benchmark>/model=*/runs/*.json) and the item "
        "table's manifest, not recomputed. An item table that has moved shows `found: no`.",
        empty="no run records under RESULTS (results copied without their runs/ folders?)",
    )
    section.blocks += _tables("provenance_items", "Item tables", prov.items_table(records))
    section.blocks += _tables(
        "provenance_runs",
        "Models and runs (engine, repo, revision, sampling, git commit)",
        prov.runs_table(records),
        folded=False,
    )
    section.blocks += _tables(
        "provenance_items_per_task",
        "Items per task and setup (item manifest)",
        prov.items_per_task(records),
        folded=True,
    )
    section.blocks += _tables(
        "provenance_software",
        "Package versions of the runs",
        prov.software_table(records),
        folded=True,
    )
    return section


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
    """Every NoReGeo section, in the order of the paper. Accuracy counts the answered rows
    (engine errors have a table of their own, as in `summarize`)."""
    refs = rt.reference_models(df)
    scored = answered(df)
    human = " The row `human` is the majority vote of annotators (human-import)."
    human = human if rt.HUMAN in df["model"].unique().to_list() else ""
    baselines = (
        f" Italic rows below the line are baselines ({', '.join(refs)}): reference "
        "answerers (oracle = upper bound, random = chance, constant = one fixed answer), "
        "not models; no across-model statistic counts them."
        if refs
        else ""
    )
    overview = Section(
        "NoReGeo: overall accuracy per model and setup",
        "Accuracy (%) over the answered items with its 95% bootstrap interval; invalid-output "
        "rate (%) of the answered items; engine-error rate (%) of all items." + human + baselines,
        _tables(
            "overall",
            "Accuracy per model and setup",
            rt.intervals(df, ["model", "setup"]),
            folded=False,
            references=refs,
        ),
    )
    table2 = Section(
        "Table 2: accuracy per category, setup and model",
        "Columns are kind-category (C: classification, N: numeric, U: unstable; the category "
        "code is the middle of the task ID). Cells: accuracy (%) over the group's items."
        + human
        + baselines,
        _tables(
            "table2", "Table 2 (accuracy, %)", rt.table2(scored), folded=False, references=refs
        ),
    )
    return [
        overview,
        table2,
        table3_section(scored, refs),
        task_figure_section(scored, out, refs, "accuracy"),
        task_figure_section(scored, out, refs, "mse"),
        gap_section(scored, out, refs),
        Section(
            "U-task pair consistency",
            "Unstable tasks come in pairs one grid step apart with different answers; a pair "
            "counts only when both items are right (%).",
            _tables("pair_consistency", "Pair consistency (%)", rt.pair_table(df), references=refs),
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
                folded=True,
                references=refs,
            ),
        ),
        health_section(df, refs),
    ]


def table3_section(scored: pl.DataFrame, refs: list[str]) -> Section:
    """Table 3 over the models under test; says so when only baselines (and human) ran."""
    long3 = rt.table3_long(scored)
    section = Section(
        "Table 3: mean ± std across models",
        "Per category and setup: mean and sample standard deviation (ddof=1) across models of "
        "each model's category accuracy (%). Counted: the models under test only; `human` "
        "and the baselines are not models.",
        _tables("table3", "Table 3 (mean ± std, %)", rt.table3(long3), folded=False)
        + _tables("table3_long", "Table 3 as numbers, with the model count", long3, folded=True),
    )
    if refs:
        section.empty = (
            f"only baselines ({', '.join(refs)}) have results, no model under test: a mean "
            "across reference answerers says nothing about models. Their rows are in Table 2."
        )
    else:
        section.empty = "no model results"
    return section


def task_figure_section(scored: pl.DataFrame, out: Path, refs: list[str], value: str) -> Section:
    """Tasks x models, the setups side by side in one figure; the tables behind it folded."""
    panels = {}
    tables: list[Block] = []
    what = "Accuracy (%)" if value == "accuracy" else "MSE (valid answers)"
    for setup in rt.setup_order(scored):
        wide = rt.task_by_model(scored, setup, value)
        if wide.is_empty():
            continue
        panels[rt.SETUP_TITLES[setup]] = wide
        tables += _tables(
            f"{value}_tasks_{setup}",
            f"{what} per task, {rt.SETUP_TITLES[setup]}",
            wide,
            folded=True,
            references=refs,
        )
    if value == "accuracy":
        section = Section(
            "Accuracy per task: the three setups side by side",
            "Tasks x models, one panel per setup (the paper's Figures 3a-5a). Green is high "
            "accuracy, red low; grey: the model did not run that task. The tables behind the "
            "figure are folded below it.",
            empty="no results",
        )
    else:
        section = Section(
            "MSE on numeric tasks",
            "Mean squared error of valid number and point answers (points: mean of dx² and "
            "dy²); invalid outputs are excluded here and counted as wrong in accuracy. Each "
            "task has its own colour scale (its cells divided by the task's largest MSE across "
            "models and setups): areas, lengths and coordinates differ by orders of magnitude. "
            "Cells print the raw MSE.",
            empty="no numeric-task results",
        )
    if not panels:
        return section
    path = panel_heatmap(
        panels, f"{what}: tasks x models per setup", out / f"figures/{value}_tasks.png", value, refs
    )
    section.blocks.append(
        Figure(
            f"figures/{path.name}",
            f"{what}, tasks x models, one panel per setup",
            "Colour bar: "
            + (
                "accuracy (%)."
                if value == "accuracy"
                else "per-task share of the "
                "task's largest MSE (0 = exact, 1 = the worst model on that task)."
            )
            + (" Italic columns right of the dashed line: baselines." if refs else ""),
        )
    )
    section.blocks += tables
    return section


def health_section(df: pl.DataFrame, refs: list[str]) -> Section:
    """Engine errors and invalid outputs apart: one is the serving stack, the other the
    model."""
    section = Section(
        "Output health: engine errors and invalid outputs",
        "Engine errors: requests that got no answer (a failed call, a crashed engine), share "
        "of all items; they are left out of accuracy. Invalid outputs: answers that are not "
        "valid JSON with the answer's keys, share of the answered items; scored wrong.",
    )
    section.blocks += _tables(
        "engine_error_rates",
        "Engine-error rate (%), of all items",
        rt.engine_error_rates(df),
        references=refs,
    )
    section.blocks += _tables(
        "invalid_rates",
        "Invalid-output rate (%), of the answered items",
        rt.invalid_rates(df),
        references=refs,
    )
    section.empty = "no rows"
    return section


def gap_section(df: pl.DataFrame, out: Path, refs: list[str]) -> Section:
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
    path = panel_heatmap(
        {"full - dotted": gap},
        "Accuracy(full) - accuracy(dotted), points",
        out / "figures/gap_tasks.png",
        "gap",
        refs,
    )
    section.blocks.append(
        Figure(
            f"figures/{path.name}",
            "Gap per task and model",
            "Colour bar: points; blue above 0 (full images help), red below.",
        )
    )
    per_category = rt.gap_by_category(df)
    path = gap_distribution(per_category, out / "figures/gap_categories.png", refs)
    section.blocks.append(
        Figure(
            f"figures/{path.name}",
            "Gap per category",
            "Box: the models under test (quartiles, whiskers to 1.5 IQR); one coloured point "
            "per model (legend); baselines as hollow grey markers, not in the box.",
        )
    )
    section.blocks += _tables(
        "gap_tasks", "Gap per task and model (points)", gap, folded=True, references=refs
    )
    section.blocks += _tables(
        "gap_categories",
        "Gap per category and model",
        per_category,
        folded=True,
        references=refs,
    )
    section.blocks += _tables(
        "gap_category_summary",
        "Gap distribution per category, over the models under test",
        rt.gap_summary(per_category, refs),
        folded=True,
    )
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
    # The final-round breakdowns are details: folded, so the headline tables stay in view.
    details = ("error_categories", "missing_objects", "failed_conditions")
    for name, title in titles.items():
        section.blocks += _tables(
            f"geobuild_{name}", title, tables[name], folded=True if name in details else None
        )
    section.empty = "the GeoBuild results hold no rows"
    return section


def found_audit(results: Location) -> tuple[pl.DataFrame | None, str]:
    """RESULTS/audit/audit.csv (where `geobuild-solve --out RESULTS` writes it) when there
    is one; else None and why. A bad file found there is reported on the page, not fatal:
    nobody asked for it by name."""
    path = results / AUDIT_PATH
    if not isinstance(path, Path) or not path.is_file():
        return None, (
            f"no audit at RESULTS/{AUDIT_PATH} (run geobuild-solve --out RESULTS, or give "
            "report --audit FILE)"
        )
    try:
        return read_audit(path), ""
    except UsageError as err:
        return None, f"RESULTS/{AUDIT_PATH} is unreadable: {err}"


def audit_section(frame: pl.DataFrame | None, why_none: str = "") -> Section:
    """Counts of the solver's constructibility audit and the problems it could not solve."""
    section = Section(
        "GeoBuild solver audit",
        "Least-squares constructibility audit of the data set (geobuild-solve): how many "
        "problems have a construction, and which conditions conflict where none was found.",
        empty=why_none or "no audit given (report --audit DIR/audit.csv)",
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
    section.blocks += _tables(
        "audit_unsolved", "Problems without a construction", unsolved, folded=True
    )
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
        section = Section(f"Probes: {encoder}", intro)
        section.blocks += [
            Heading(
                "Table 4: probe accuracy (%)",
                "Rows: training regime (All: one probe on every task; Separate: one per task) "
                "and config; columns: the test task and test images.",
            )
        ]
        section.blocks += _tables(
            f"probe_table4_{slug}",
            f"Table 4, {encoder}",
            readable_probe_columns(parts["table4"]),
        )
        table5 = parts["table5"]
        none = "" if not table5.is_empty() else f"No cross-task transfer reaches {min_accuracy:g}%."
        section.blocks += [
            Heading("Table 5: cross-task transfer", none or "Configs as config/test images.")
        ]
        section.blocks += _tables(f"probe_table5_{slug}", f"Table 5, {encoder}", table5)
        section.empty = f"no probe accuracies for {encoder}"
        sections.append(section)
    return sections


def readable_probe_columns(table4: pl.DataFrame) -> pl.DataFrame:
    """Table 4's paper-style heads (`AllF`, `C-BCT-CTD`) spelled out: `all tasks, full
    images`, `C-BCT-CT, dotted images`."""
    from probes.data import SETUP_OF_SUBSCRIPT

    names = {}
    for column in table4.columns:
        subscript, stem = column[-1:], column[:-1]
        if subscript in SETUP_OF_SUBSCRIPT and stem and column not in ("Config", "Train DS"):
            task = "all tasks (mean)" if stem == "All" else stem
            names[column] = f"{task}, {SETUP_OF_SUBSCRIPT[subscript]} images"
    return table4.rename({"Train DS": "training regime", "Config": "config", **names})
