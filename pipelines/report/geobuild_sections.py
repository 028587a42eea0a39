"""The report's GeoBuild and solver-audit sections, the success-by-round figure, and the
audit file reader."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from pipelines.cli_args import read_utf8  # noqa: E402
from pipelines.report.figures import DPI, PLAIN  # noqa: E402
from pipelines.report.html_page import Figure, Section  # noqa: E402
from pipelines.report.html_page import table_blocks as _tables  # noqa: E402
from store.errors import UsageError  # noqa: E402
from store.storage import Location  # noqa: E402

# The audit.csv columns (geobuild_solve.AUDIT_COLUMNS) that the audit section needs; the
# later ones (success_public, broken_data) are shown when present (older audits lack them).
AUDIT_NEEDS = ("id", "status", "conflicts", "reason", "seconds")
# Where `geobuild-solve --out RESULTS` leaves its audit; the report reads it from there.
AUDIT_PATH = "audit/audit.csv"
# Tables of geobuild-summarize shown in the report, with their titles there.
GEOBUILD_TITLES = {
    "overall": "Success and rounds per model",
    "by_category": "Per problem category",
    "by_difficulty": "Per difficulty",
    "success_by_round": "Self-correction: problems solved by each round",
    "feedback_fixes": "Self-correction: round-1 failures fixed in a later round",
    "error_transitions": "Self-correction: outcome of a round -> outcome of the next",
    "error_categories": "Final-round error categories (ours and the public benchmark's kind)",
    "missing_objects": "Missing objects by type (final round)",
    "failed_conditions": "Failed conditions by type (final round)",
    "error_accounting": "Error counts: ours on the final round beside the public benchmark's "
    "sums over every step (hallucinations, recovery steps, missing objects, failed conditions)",
}
# Breakdowns folded, so the headline tables and the figure stay in view.
FOLDED = (
    "error_transitions",
    "error_categories",
    "missing_objects",
    "failed_conditions",
    "error_accounting",
)


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


def geobuild_section(results: Location, out: Path) -> Section:
    """GeoBuild success (both verdicts, both denominators), self-correction (tables and the
    success-by-round figure under `out`/figures), error categories, missing objects and
    failed conditions."""
    section = Section(
        "GeoBuild",
        "Success by our rule (every required object present, every condition holding) and "
        "by the public benchmark's (object and condition scores both at least 0.9; an "
        "execution error fails both), each over every attempted problem (all) and over the "
        "problems whose data is clean (the loader found no data error; the public benchmark "
        "also leaves problems it finds broken out of its denominator). Mean rounds to "
        "success and mean partial score (0.3 objects + 0.7 conditions). Self-correction: "
        "cumulative success by round, round-1 failures fixed later, and how each round's "
        "outcome (error category, failed_validation: ran but objects or conditions fail, "
        "or success) is followed in the next round. Error categories, missing objects and "
        "failed conditions are those of each problem's final round.",
    )
    from pipelines.geobuild.summarize import shown_tables, summary_tables

    try:
        tables = shown_tables(summary_tables(results))
    except UsageError as err:
        section.empty = str(err)
        return section
    for name, title in GEOBUILD_TITLES.items():
        section.blocks += _tables(
            f"geobuild_{name}", title, tables[name], folded=True if name in FOLDED else None
        )
        if name == "success_by_round" and not tables[name].is_empty():
            path = success_by_round_figure(tables[name], out / "figures/geobuild_rounds.png")
            section.blocks.append(
                Figure(
                    f"figures/{path.name}",
                    "Success by round, one line per model",
                    "Solid: our rule; dashed: the public rule. Share of every attempted "
                    "problem solved by the end of each round; a flat line is feedback "
                    "that fixed nothing.",
                )
            )
    section.empty = "the GeoBuild results hold no rows"
    return section


def success_by_round_figure(by_round: pl.DataFrame, path: Path) -> Path:
    """Cumulative success % by round, one colour per model, our rule solid and the public
    rule dashed (the shown `success_by_round` table)."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6), layout="constrained")
    palette = plt.get_cmap("tab10")
    for k, model in enumerate(sorted(by_round["model"].unique().to_list())):
        part = by_round.filter(pl.col("model") == model).sort("round")
        colour = palette(k % 10)
        rounds = part["round"].to_list()
        ax.plot(rounds, part["success % by round (all)"].to_list(), marker="o", color=colour,
                label=model)  # fmt: skip
        ax.plot(rounds, part["public success % by round (all)"].to_list(), linestyle="--",
                marker="x", color=colour, label=f"{model} (public rule)")  # fmt: skip
    last = int(by_round["round"].max() or 1)  # type: ignore[arg-type]
    ax.set_xticks(range(1, last + 1))
    ax.set_xlabel("round")
    ax.set_ylabel("solved by this round, % of all problems")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title("GeoBuild: success by round (solid: ours; dashed: public rule)", fontsize=9)
    legend = ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    for text in legend.get_texts():
        text.set(**PLAIN)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


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
        "problems have a construction, and which conditions conflict where none was found. "
        "The upper bound: the share of problems the solver's programs solve, by our rule and "
        "the public one, over all problems and over those with clean data.",
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
    section.blocks += _tables("audit_upper_bound", "Solver upper bound", audit_upper_bound(frame))
    section.blocks += _tables("audit_conflicts", "Conflicting condition types", conflicts)
    section.blocks += _tables(
        "audit_unsolved", "Problems without a construction", unsolved, folded=True
    )
    return section


def audit_upper_bound(frame: pl.DataFrame) -> pl.DataFrame:
    """One row: the solver's success % by our rule (status solved) and the public one, over
    all problems and over clean data; empty for an audit without those columns."""
    if not {"success_public", "broken_data"} <= set(frame.columns):
        return pl.DataFrame()
    marks = frame.select(
        (pl.col("status") == "solved").alias("solved"),
        pl.col("success_public").cast(pl.String).str.to_lowercase().eq("true").alias("public"),
        pl.col("broken_data").cast(pl.String).str.to_lowercase().eq("true").alias("broken"),
    )
    clean = ~pl.col("broken")

    def share(column: str, pool: pl.Expr | None = None) -> pl.Expr:
        values = pl.col(column) if pool is None else pl.col(column).filter(pool)
        return (values.mean() * 100).round(1)

    return marks.select(
        pl.len().alias("problems"),
        pl.col("broken").sum().alias("broken_data"),
        share("solved").alias("success % (all)"),
        share("solved", clean).alias("success % (clean data)"),
        share("public").alias("public success % (all)"),
        share("public", clean).alias("public success % (clean data)"),
    )
