"""`python -m pipelines report RESULTS --out DIR`: the tables and figures a paper would show.

The page opens with the key results (what ran, accuracy per model and setup, GeoBuild's
success and the solver's upper bound) and a banner naming the random-weight models and
baselines, which carry a tag in every table; the details follow, mostly folded. Reads the
run records (provenance: items, models, settings, software), RESULTS/noregeo
(the headline by the paper's definition and our binary and multiple-choice accuracy, Table 2
with its best cells marked, Table 3 by the method the paper's numbers favour, task figures with the
setups side by side, MSE, gaps (Figures 2, 6, 7), pair consistency, intervals, engine-error
and invalid-output rates; `human` from `human-import` and the baselines appear as marked
rows, outside every across-model statistic), RESULTS/geobuild, the solver audit
(RESULTS/audit/audit.csv, or `--audit FILE`) and RESULTS/probes (Tables 4-5 with
`--min-accuracy`, the transfer matrix as Figure 8). Writes DIR/index.html and
DIR/samples.html with its pages (static, no network assets), DIR/figures/*.png, DIR/samples/ and
DIR/tables/*.{csv,md}. A part with no results becomes a section that says so.
docs/report.md explains each part.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import polars as pl

from pipelines.command_line.args import (
    binary_accuracy_percent,
    existing_file,
    output_dir,
    results_location,
)
from pipelines.noregeo.summarize import load_results
from pipelines.report.geobuild_sections import (
    AUDIT_PATH,
    audit_section,
    found_audit,
    geobuild_lines,
    geobuild_section,
    geobuild_tables,
    geobuild_tags,
    read_audit,
    solver_in_loop,
)
from pipelines.report.html_page import Section, write_report
from pipelines.report.key_results import banner, key_section, with_weights
from pipelines.report.noregeo_sections import missing_section, noregeo_sections, provenance_section
from pipelines.report.probe_sections import probe_sections
from pipelines.report.provenance import run_records
from pipelines.report.samples import samples_page
from pipelines.report.tables import model_tags
from store.errors import UsageError
from store.storage import Location


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
        "--min-accuracy",
        type=binary_accuracy_percent,
        default=70.0,
        help="probe Table 5 threshold, in percent (the probe tasks are binary: 50 is chance): "
        "cross-task transfers at or above it are listed",
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
        previous = out if (out / "index.html").is_file() else None
        _write_report(results, staging, audit, min_accuracy, previous)
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
    results: Location,
    out: Path,
    audit: pl.DataFrame | None,
    min_accuracy: float,
    previous: Path | None = None,
) -> Path:
    """The report into `out`; what `previous` (the report it replaces) already holds
    unchanged (sample pages and images) is linked from there, not made again."""
    records = run_records(results)
    try:
        df = with_weights(load_results(results), records)
    except UsageError as err:
        df, missing = None, str(err)
    sections: list[Section] = []
    links = ""
    tags: dict[str, str] = {}
    if df is not None:
        tags = model_tags(df)
        sections += noregeo_sections(df, out) + missing_section(results, df)
        samples_page(df, records, out, previous)
        links = (
            '<p><a href="samples.html">Sample browser</a>: every item with its image, prompt, '
            "the gold answer and each model's output and verdict, a page per task, setup and "
            "10 items; filter by model and verdict.</p>"
        )
    else:
        sections.append(
            Section("NoReGeo", "Accuracy of models on the NoReGeo items.", empty=missing)
        )
    if audit is None:
        audit, audit_note = found_audit(results)
    else:
        audit_note = ""
    geobuild = geobuild_tables(results)
    solver_ran = solver_in_loop(geobuild)
    tags |= geobuild_tags(records, geobuild)
    sections += [
        geobuild_section(results, out, geobuild, tags),
        audit_section(audit, audit_note, solver_ran),
        *probe_sections(results, min_accuracy, out),
        provenance_section(records),
    ]
    key = key_section(df, geobuild_lines(geobuild, audit))
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    subtitle = f"Results from {results}, report built {stamp}."
    return write_report(
        out, "NoReGeo and GeoBuild report", subtitle, [key, *sections], links, tags, banner(tags)
    )
