"""The report's GeoBuild and solver-audit sections, the success-by-round figure, the key
results' GeoBuild lines, and the audit file reader.

One solver upper bound: the agent loop's verdict on the solver's programs (the solver row of
the GeoBuild tables) when the loop ran; the audit's figure only when it did not. The two
differ by the problems with nothing to judge (no required objects, no conditions): the
audit's status calls them solved with an empty program, the loop executes that program and
finds none (on the demo: 93.0% against 92.6% of 489 problems). The loop's figure is the one
models are compared with (the same execution and validation), and the audit's is computed
the same way here (those problems unsolved), so both say the same."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from geometry.dsl.dataset import NOTHING_TO_JUDGE  # noqa: E402
from pipelines.command_line.args import read_utf8  # noqa: E402
from pipelines.report.figures import DPI, MIN_TEXT_PT, PLAIN, reference_label  # noqa: E402
from pipelines.report.html_page import Figure, Heading, Section  # noqa: E402
from pipelines.report.html_page import table_blocks as _tables  # noqa: E402
from pipelines.report.provenance import Record  # noqa: E402
from pipelines.report.tables import REPLAY_TAG, SOLVER_TAG  # noqa: E402
from store.errors import UsageError  # noqa: E402
from store.storage import Location  # noqa: E402

# The audit.csv columns (geobuild_solve.AUDIT_COLUMNS) that the audit section needs; the
# later ones (success_public, broken_data) are shown when present (older audits lack them).
AUDIT_NEEDS = ("id", "status", "conflicts", "reason", "seconds")
# The model name of the solver's programs run through the agent loop (geobuild --engine solver).
SOLVER = "solver"
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
# Shown open; every other table is folded, so the section stays short.
OPEN = ("overall",)
# The self-correction tables (and figure): shown only when some round changed an outcome.
SELF_CORRECTION = ("success_by_round", "feedback_fixes", "error_transitions")
# Our rule's column and the public rule's: where they agree on every row, one column shows both.
RULE_PAIRS = (
    ("solved", "solved_public"),
    ("success % (all)", "public success % (all)"),
    ("success % (clean data)", "public success % (clean data)"),
    ("solved_by_round", "solved_public_by_round"),
    ("success % by round (all)", "public success % by round (all)"),
    ("first_round_failures", "first_round_public_failures"),
    ("fixed_later", "fixed_later_public"),
    ("fixed %", "public fixed %"),
)
# Significant digits of tables whose numbers are not percentages (per-problem means).
DIGITS = {"error_accounting": 3}
GeoBuildTables = dict[str, pl.DataFrame]


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


def geobuild_tables(results: Location) -> GeoBuildTables | str:
    """geobuild-summarize's tables as shown (rates in %), or why there are none."""
    from pipelines.geobuild.summarize import shown_tables, summary_tables

    try:
        return shown_tables(summary_tables(results))
    except UsageError as err:
        return str(err)


def geobuild_section(
    results: Location,
    out: Path,
    tables: GeoBuildTables | str | None = None,
    tags: dict[str, str] | None = None,
) -> Section:
    """GeoBuild success (both verdicts, both denominators), self-correction (tables and the
    success-by-round figure under `out`/figures, or one sentence when no round after the
    first changed anything), error categories, missing objects and failed conditions.
    `tables`: geobuild_tables(results), when the caller has them already."""
    section = Section(
        "GeoBuild",
        "Success by our rule (every required object present, every condition holding) and "
        "by the public benchmark's (object and condition scores both at least 0.9; an "
        "execution error fails both), each over every attempted problem (all) and over the "
        "problems whose data is clean (the loader found no data error; the public benchmark "
        "also leaves problems it finds broken out of its denominator). Each rule's success "
        "comes only from runs that stopped on it: column protocol says which (geosee: our "
        "loop, which stops a problem on our rule; public: GeoBuildBench's agent, which stops "
        "on the public rule), and the other rule's cells of that run are empty (a problem "
        "stopped early might have passed the other rule later); a run of one round reports "
        "both. Mean rounds to success (by the run's rule) and mean partial score (0.3 "
        "objects + 0.7 conditions, in %). Error "
        "categories, missing objects and failed conditions are those of each problem's final "
        "round; the breakdowns are folded.",
    )
    if tables is None:
        tables = geobuild_tables(results)
    if isinstance(tables, str):
        section.empty = tables
        return section
    changed = rounds_changed(tables)
    for name, title in GEOBUILD_TITLES.items():
        if name in SELF_CORRECTION and not changed:
            continue
        frame, agree = collapse_agreeing(readable(tagged_last(tables[name], tags or {})))
        note = (
            f"Our rule and the public one agree on every row for {', '.join(agree)}: one "
            "column shows both."
            if agree
            else ""
        )
        section.blocks += _tables(
            f"geobuild_{name}", title, frame, note, folded=name not in OPEN,
            digits=DIGITS.get(name),
        )  # fmt: skip
        if name == "success_by_round" and not tables[name].is_empty():
            path = success_by_round_figure(tables[name], out / "figures/geobuild_rounds.png", tags)
            section.blocks.append(
                Figure(
                    f"figures/{path.name}",
                    "Success by round, one line per model",
                    "Solid: our rule; dashed: the public rule. Share of every attempted "
                    "problem solved by the end of each round; a flat line is feedback "
                    "that fixed nothing.",
                )
            )
    if not changed and not tables["success_by_round"].is_empty():
        section.blocks.append(Heading("Self-correction", self_correction_sentence(tables)))
    section.empty = "the GeoBuild results hold no rows"
    return section


def tagged_last(frame: pl.DataFrame, tags: dict[str, str]) -> pl.DataFrame:
    """The rows of tagged models (the solver, scripted replies) after the models under test,
    as the report's banner says; each group in its own order."""
    if not tags or "model" not in frame.columns:
        return frame
    order = frame.with_row_index("_row")
    return order.sort(pl.col("model").is_in(list(tags)), "_row").drop("_row")


def readable(frame: pl.DataFrame) -> pl.DataFrame:
    """The mean partial score (0..1) as a percentage with one decimal, like every rate."""
    if "mean_partial_score" not in frame.columns:
        return frame
    score = (pl.col("mean_partial_score") * 100).round(1).alias("mean partial score (%)")
    return (
        frame.with_columns(score)
        .drop("mean_partial_score")
        .select(
            [c if c != "mean_partial_score" else "mean partial score (%)" for c in frame.columns]
        )
    )


def collapse_agreeing(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """Each RULE_PAIRS pair whose columns are equal on every row becomes one column, named
    `<ours> (both rules)`; returns the frame and the names of the collapsed columns."""
    agree = [
        (ours, public)
        for ours, public in RULE_PAIRS
        if ours in frame.columns
        and public in frame.columns
        and frame[ours].cast(pl.Float64).equals(frame[public].cast(pl.Float64))
    ]
    if not agree:
        return frame, []
    renamed = frame.drop([public for _, public in agree]).rename(
        {ours: f"{ours} (both rules)" for ours, _ in agree}
    )
    return renamed, [ours for ours, _ in agree]


def rounds_changed(tables: GeoBuildTables) -> bool:
    """Whether any round after the first changed an outcome of any model: more problems
    solved by a later round (either rule), a round-1 failure fixed, or an error that turned
    into another kind."""
    by_round = tables["success_by_round"]
    if by_round.is_empty() or int(by_round["round"].max() or 1) < 2:  # type: ignore[arg-type]
        return False
    grew = by_round.group_by("model").agg(
        (pl.col(c).n_unique() > 1).alias(c) for c in ("solved_by_round", "solved_public_by_round")
    )
    if grew.select(pl.any_horizontal(pl.exclude("model")).any()).item():
        return True
    transitions = tables["error_transitions"]
    return not transitions.filter(pl.col("from_kind") != pl.col("to_kind")).is_empty()


def self_correction_sentence(tables: GeoBuildTables) -> str:
    """What the self-correction rounds did when they changed nothing, with their numbers."""
    by_round = tables["success_by_round"]
    rounds = int(by_round["round"].max() or 1)  # type: ignore[arg-type]
    fixes = tables["feedback_fixes"]
    failures = ", ".join(
        f"{r['model']} (protocol {r['protocol']}): "
        + " and ".join(
            f"{r[column]} round-1 failures{by}"
            for column, by in (
                ("first_round_failures", " by our rule"),
                ("first_round_public_failures", " by the public rule"),
            )
            if r[column] is not None
        )
        for r in fixes.iter_rows(named=True)
    )
    if rounds < 2:
        return "One round ran: no self-correction to show."
    return (
        f"Up to {rounds} rounds ran and no round after the first changed any outcome by "
        f"either rule ({failures}; none fixed later), so the self-correction tables and "
        "figure are left out."
    )


def geobuild_lines(tables: GeoBuildTables | str, audit: pl.DataFrame | None) -> list[str]:
    """The key results' GeoBuild sentences: each model's success by the rule(s) its run
    reports, with its protocol, and the one solver upper bound (the loop's solver row, else
    the audit's)."""
    lines = []
    if not isinstance(tables, str) and not tables["overall"].is_empty():
        for row in tables["overall"].iter_rows(named=True):
            what = "the solver's upper bound" if row["model"] == SOLVER else row["model"]
            rates = [
                f"{_pct(row[f'{prefix}success % (all)'])} by {rule} rule "
                f"({_pct(row[f'{prefix}success % (clean data)'])} of those with clean data)"
                for prefix, rule in (("", "our"), ("public ", "the public"))
                if row[f"{prefix}success % (all)"] is not None
            ]
            lines.append(
                f"GeoBuild, {what} (protocol {row['protocol']}), {row['problems']} problems: "
                f"{', '.join(rates)}."
            )
    if audit is not None and not solver_in_loop(tables):
        bound = audit_upper_bound(audit)
        if not bound.is_empty():
            row = bound.row(0, named=True)
            lines.append(
                f"GeoBuild, the solver's upper bound (audit): {row['success % (all)']:.1f}% of "
                f"{row['problems']} problems by our rule, {row['public success % (all)']:.1f}% "
                "by the public rule."
            )
    return lines


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


# The tag of a GeoBuild run by the engine its run record names (not models under test).
ENGINE_TAGS = {"solver": SOLVER_TAG, "programs": REPLAY_TAG}


def geobuild_tags(records: list[Record], tables: GeoBuildTables | str) -> dict[str, str]:
    """Model -> tag for the GeoBuild rows that are no model: the solver (`solver`, also when
    its run records are gone but its row is there) and scripted replies (`program replay`),
    by the engine their run records name."""
    tags = {SOLVER: SOLVER_TAG} if solver_in_loop(tables) else {}
    for record in records:
        model = record.data.get("model")
        if record.benchmark != "geobuild" or not isinstance(model, dict):
            continue
        if model.get("engine") in ENGINE_TAGS:
            name = model.get("name") or record.folder.removeprefix("model=")
            tags[str(name)] = ENGINE_TAGS[model["engine"]]
    return tags


def solver_in_loop(tables: GeoBuildTables | str) -> bool:
    """Whether the GeoBuild results hold the solver's run through the agent loop."""
    return not isinstance(tables, str) and SOLVER in tables["overall"]["model"].to_list()


def success_by_round_figure(
    by_round: pl.DataFrame, path: Path, tags: dict[str, str] | None = None
) -> Path:
    """Cumulative success % by round, one colour per model, our rule solid and the public
    rule dashed (the shown `success_by_round` table); a tagged row (geobuild_tags: the
    solver, scripted replies) is labelled with its tag."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6), layout="constrained")
    palette = plt.get_cmap("tab10")
    for k, model in enumerate(sorted(by_round["model"].unique().to_list())):
        part = by_round.filter(pl.col("model") == model).sort("round")
        colour = palette(k % 10)
        label = reference_label(model, tags) if tags and model in tags else model
        rounds = part["round"].to_list()
        ours, public = part["success % by round (all)"], part["public success % by round (all)"]
        # A rule the run did not stop on has no numbers (summarize.reported_rules): no line.
        if ours.null_count() < part.height:
            ax.plot(rounds, ours.to_list(), marker="o", color=colour, label=label)
        if public.null_count() < part.height:
            ax.plot(rounds, public.to_list(), linestyle="--", marker="x", color=colour,
                    label=f"{label} (public rule)")  # fmt: skip
    last = int(by_round["round"].max() or 1)  # type: ignore[arg-type]
    ax.set_xticks(range(1, last + 1))
    ax.set_xlabel("round")
    ax.set_ylabel("solved by this round, % of all problems")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title("GeoBuild: success by round (solid: ours; dashed: public rule)", fontsize=9)
    legend = ax.legend(
        fontsize=MIN_TEXT_PT, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False
    )
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


def audit_section(
    frame: pl.DataFrame | None, why_none: str = "", solver_ran: bool = False
) -> Section:
    """Counts of the solver's constructibility audit and the problems it could not solve;
    the upper bound only when the solver did not run through the agent loop (`solver_ran`:
    its GeoBuild row is then the one upper bound on the page)."""
    where = (
        "The solver's upper bound is its row in the GeoBuild tables (its programs run "
        "through the agent loop)."
        if solver_ran
        else "The upper bound: the share of problems the solver's programs solve, by our "
        "rule and the public one, over all problems and over those with clean data."
    )
    section = Section(
        "GeoBuild solver audit",
        "Least-squares constructibility audit of the data set (geobuild-solve): how many "
        "problems have a construction, and which conditions conflict where none was found. "
        "Status solved includes the problems with nothing to judge (no required objects, no "
        "conditions), which no program can solve or fail. " + where,
        empty=why_none or "no audit given (report --audit DIR/audit.csv)",
        folded=True,
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
    section.blocks += _tables("audit_status", "Audit status counts", counts, digits=2)
    if not solver_ran:
        section.blocks += _tables(
            "audit_upper_bound", "Solver upper bound", audit_upper_bound(frame)
        )
    section.blocks += _tables("audit_conflicts", "Conflicting condition types", conflicts)
    section.blocks += _tables(
        "audit_unsolved", "Problems without a construction", unsolved, folded=True
    )
    return section


def audit_upper_bound(frame: pl.DataFrame) -> pl.DataFrame:
    """One row: the solver's success % by our rule (status solved) and the public one, over
    all problems and over clean data; empty for an audit without those columns. A problem
    with nothing to judge counts unsolved by both rules, as the agent loop finds it (module
    docstring), so this figure and the loop's solver row agree."""
    if not {"success_public", "broken_data"} <= set(frame.columns):
        return pl.DataFrame()
    judged = pl.col("reason").fill_null("") != NOTHING_TO_JUDGE
    marks = frame.select(
        ((pl.col("status") == "solved") & judged).alias("solved"),
        (pl.col("success_public").cast(pl.String).str.to_lowercase().eq("true") & judged).alias(
            "public"
        ),
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
