"""The report's GeoBuild, solver-audit and probe sections, and the audit file reader."""

from __future__ import annotations

import io
import re
from pathlib import Path

import polars as pl

from pipelines.cli_args import read_utf8
from pipelines.report.html_page import Heading, Section
from pipelines.report.html_page import table_blocks as _tables
from store.errors import UsageError
from store.storage import Location

# The audit.csv columns (geobuild_solve.AUDIT_COLUMNS) that the audit section reads.
AUDIT_NEEDS = ("id", "status", "conflicts", "reason", "seconds")
# Where `geobuild-solve --out RESULTS` leaves its audit; the report reads it from there.
AUDIT_PATH = "audit/audit.csv"


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
                "Rows: training regime (All: one probe on every task; Separate: one per task; "
                "Shuffled labels: one per task trained on permuted labels, a control at chance) "
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
