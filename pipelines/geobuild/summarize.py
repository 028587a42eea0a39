"""`geobuild-summarize RESULTS`: GeoBuild metrics from result shards, as polars tables.

The denominator is every problem a run attempted, read from the run records, so a problem
whose every round errored, or that has no row at all (a run killed early), still counts as
unsolved. Each rate is given twice over: by our verdict (`success`: every object present,
every condition holding) and by the public benchmark's (`success_public`: both scores at
least 0.9), and over two denominators: every attempted problem (`all`) and the problems
whose data is clean (`clean data`: the problem's `data_errors` empty; the public benchmark
leaves problems it finds broken out of its success rate).

A rate is reported only under the stopping rule that produced it. Our loop (`--protocol
geosee`) stops a problem when our rule passes, the public agent (`--protocol public`) when
the public rule does: a problem our loop stopped at round 2 might have passed the public
rule at round 4, so a run's success by the other rule is biased and is left null (shown
empty), unless the run allowed one round (nothing was stopped early: the solver's upper
bound). Every per-model table carries the run's `protocol` (its settings.json; geosee when
it does not say). Error categories, missing objects
and failed conditions are those of each problem's final round. Partial score = 0.3 x object
score + 0.7 x condition score. The self-correction tables follow each problem round by
round: success by round, first-round failures fixed later, and the kind of each round's
outcome against the next one's.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from geometry.dsl.public_categories import PUBLIC_KIND
from geometry.dsl.validator import CONDITION_WEIGHT, OBJECT_WEIGHT, PUBLIC_SUCCESS_THRESHOLD
from pipelines.command_line.args import results_location
from pipelines.geobuild.error_accounting import error_accounting
from pipelines.geobuild.rows import RESULT_SCHEMA
from pipelines.terminal.output import add_table_arguments, chosen_tables, percent
from pipelines.terminal.output import print_tables as print_output
from store.errors import UsageError
from store.settings import read_settings
from store.shards import read_shards
from store.storage import Location, children

BENCHMARK = "geobuild"
_COLUMNS = [
    "model",
    "problem_id",
    "round",
    "error_category",
    "verdict",
    "object_score",
    "condition_score",
    "success",
]
# Columns older shards lack: derived from the others when absent (see _normalised).
_OPTIONAL = [
    "success_public",
    "error_category_public",
    "data_errors",
    "object_score_public",
    "condition_score_public",
]
# The outcome kind of a round that ran without error but was not solved (transitions).
FAILED_VALIDATION = "failed_validation"
SUCCESS = "success"
PROTOCOL = "protocol"
# The rates of our rule and of the public one: each is left null in a run that stopped on
# the other rule (reported_rules).
OURS = (
    "solved", "success_rate_all", "success_rate_clean", "solved_by_round",
    "success_rate_by_round", "first_round_failures", "fixed_later", "fixed_rate",
)  # fmt: skip
PUBLIC = (
    "solved_public", "public_success_rate_all", "public_success_rate_clean",
    "solved_public_by_round", "public_success_rate_by_round", "first_round_public_failures",
    "fixed_later_public", "public_fixed_rate",
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `geobuild-summarize` command's options."""
    parser.add_argument(
        "results", type=results_location, help="the --out directory (or URI) of `geobuild`"
    )
    parser.add_argument("--model", default=None, help="one model's name only")
    add_table_arguments(parser, list(TITLES), HEADLINE)


def run(args: argparse.Namespace) -> int:
    """Print the chosen GeoBuild summary tables; the exit code."""
    names = chosen_tables(args, list(TITLES), HEADLINE)
    print_tables(summary_tables(args.results, args.model), args.format, names, args.csv_dir)
    return 0


def _model_dirs(results: Location, model: str | None) -> list[Location]:
    base = results / BENCHMARK
    if not base.is_dir():
        raise UsageError(f"{results} holds no GeoBuild results (no {base}); run `geobuild`")
    dirs = [d for d in children(base, "model=*") if d.is_dir()]
    if model is not None:
        from store.records import model_slug

        dirs = [d for d in dirs if d.name == f"model={model_slug(model)}"]
        if not dirs:
            raise UsageError(f"no GeoBuild results for model {model!r} under {base}")
    return dirs


def attempted(model_root: Location) -> pl.DataFrame:
    """Every problem any run of this model attempted: problem_id, category, difficulty."""
    return _attempted(model_root)[0]


def _attempted(model_root: Location) -> tuple[pl.DataFrame, int]:
    """The attempted problems, and the most rounds any run of this model allowed (0: none
    recorded)."""
    seen: dict[str, dict[str, object]] = {}
    max_rounds = 0
    for record in children(model_root / "runs", "*.json"):
        data = json.loads(record.read_text())
        if isinstance(data.get("max_rounds"), int):
            max_rounds = max(max_rounds, data["max_rounds"])
        for p in data.get("problems", []):
            seen[str(p["id"])] = {
                "problem_id": str(p["id"]),
                "category": str(p.get("category", "")),
                "difficulty": int(p.get("difficulty", 0)),
            }
    schema = {"problem_id": pl.String, "category": pl.String, "difficulty": pl.Int64}
    return pl.DataFrame(list(seen.values()), schema=schema), max_rounds


@dataclass(frozen=True)
class Rows:
    """A results root read once: one row per attempted problem (`outcomes`), and every
    round row of those problems (`rounds`, typed and with the public columns filled)."""

    outcomes: pl.DataFrame
    rounds: pl.DataFrame


def run_protocol(model_root: Location) -> str:
    """The protocol a model folder's runs used: its settings.json says `public`; geosee when
    it says nothing (our loop records no protocol,
    pipelines.geobuild.conversations.FIXED_SETTINGS)."""
    stored = read_settings(model_root)
    return str((stored or {}).get(PROTOCOL) or "geosee")


def reported_rules(table: pl.DataFrame) -> pl.DataFrame:
    """`table` (with `protocol` and `max_rounds` columns) with the rates of the rule its run
    did not stop on set to null; both kept for a run of one round."""
    one_round = pl.col("max_rounds") <= 1
    ours = (pl.col(PROTOCOL) == "geosee") | one_round
    public = (pl.col(PROTOCOL) == "public") | one_round
    return table.with_columns(
        *[pl.when(ours).then(pl.col(c)).alias(c) for c in OURS if c in table.columns],
        *[pl.when(public).then(pl.col(c)).alias(c) for c in PUBLIC if c in table.columns],
    )


def _with_protocol(table: pl.DataFrame, outcomes: pl.DataFrame) -> pl.DataFrame:
    """A per-model `table` with each model's protocol beside the model, and only the rates
    of the rule its run stopped on (reported_rules)."""
    runs = outcomes.group_by("model").agg(pl.col(PROTOCOL).first(), pl.col("max_rounds").max())
    joined = reported_rules(table.join(runs, on="model", how="left"))
    rest = [c for c in table.columns if c != "model"]
    return joined.select("model", PROTOCOL, *rest)


def _normalised(rows: pl.DataFrame) -> pl.DataFrame:
    """Round rows typed, with success_public, error_category_public and data_broken filled
    in for shards written before those columns existed."""
    category = pl.col("error_category")
    public_rule = (
        category.is_null()
        & (pl.col("object_score").cast(pl.Float64) >= PUBLIC_SUCCESS_THRESHOLD)
        & (pl.col("condition_score").cast(pl.Float64) >= PUBLIC_SUCCESS_THRESHOLD)
    )
    mapped = (
        pl.when(category.is_null())
        .then(pl.lit(None, pl.String))
        .otherwise(category.replace_strict(PUBLIC_KIND, default="other_error"))
    )
    return rows.with_columns(
        pl.col("round").cast(pl.Int64),
        pl.col("success").cast(pl.Boolean),
        pl.coalesce(pl.col("success_public").cast(pl.Boolean), public_rule).alias("success_public"),
        pl.coalesce(pl.col("error_category_public").cast(pl.String), mapped).alias(
            "error_category_public"
        ),
        (pl.col("data_errors").cast(pl.String).fill_null("") != "").alias("data_broken"),
    )


def read_rows(results: Location, model: str | None = None) -> Rows:
    """The outcomes and round rows of every model (or `model`) under `results`."""
    outcome_frames, round_frames = [], []
    for root in _model_dirs(results, model):
        problems, recorded_rounds = _attempted(root)
        problems = problems.with_columns(
            model_dir=pl.lit(root.name), protocol=pl.lit(run_protocol(root))
        )
        read = read_shards(root, _COLUMNS, optional=_OPTIONAL, schema=RESULT_SCHEMA)
        empty = {c: pl.String for c in [*_COLUMNS, *_OPTIONAL]}
        rows = _normalised(read if read is not None else pl.DataFrame(schema=empty))
        rows = rows.join(problems.select("problem_id"), on="problem_id", how="semi")
        max_rounds = max(recorded_rounds, rows["round"].max() or 0)
        final = (
            rows.sort("round")
            .group_by("problem_id")
            .agg(
                pl.col("model").last(),
                pl.col("round").max().alias("rounds"),
                pl.col("success").any().alias("success"),
                pl.col("success_public").any().alias("success_public"),
                pl.col("round").filter(pl.col("success")).min().alias("solved_at"),
                pl.col("round").filter(pl.col("success_public")).min().alias("solved_public_at"),
                pl.col("data_broken").any(),
                pl.col("error_category").last(),
                pl.col("error_category_public").last(),
                pl.col("verdict").last(),
                pl.col("object_score").cast(pl.Float64).last(),
                pl.col("condition_score").cast(pl.Float64).last(),
                # The public verdict's scores (null in rows written before it was recorded).
                pl.col("object_score_public").cast(pl.Float64).last(),
                pl.col("condition_score_public").cast(pl.Float64).last(),
            )
        )
        outcome_frames.append(
            problems.join(final, on="problem_id", how="left").with_columns(
                max_rounds=pl.lit(max_rounds, pl.Int64)
            )
        )
        round_frames.append(rows.with_columns(model_dir=pl.lit(root.name)))
    if not outcome_frames:
        raise UsageError(f"{results}/{BENCHMARK} holds no model directories")
    out = pl.concat(outcome_frames, how="diagonal_relaxed")
    not_run = pl.col("rounds").is_null()
    outcomes = out.with_columns(
        pl.col("model").fill_null(pl.col("model_dir").str.strip_prefix("model=")),
        pl.col("success").fill_null(False),
        pl.col("success_public").fill_null(False),
        # Data notes come with the rows: a problem with none is counted as clean.
        pl.col("data_broken").fill_null(False),
        pl.col("rounds").fill_null(0),
        # "not_run": attempted but no row (a run killed early); "none": ran without error.
        pl.when(not_run)
        .then(pl.lit("not_run"))
        .otherwise(pl.col("error_category").fill_null("none"))
        .alias("error_category"),
        pl.when(not_run)
        .then(pl.lit("not_run"))
        .otherwise(pl.col("error_category_public").fill_null("none"))
        .alias("error_category_public"),
        partial_score=(
            OBJECT_WEIGHT * pl.col("object_score").fill_null(0.0)
            + CONDITION_WEIGHT * pl.col("condition_score").fill_null(0.0)
        ),
    ).drop("model_dir")
    rounds = pl.concat(round_frames, how="diagonal_relaxed")
    rounds = rounds.with_columns(
        pl.col("model").fill_null(pl.col("model_dir").str.strip_prefix("model="))
    ).drop("model_dir")
    return Rows(outcomes, rounds)


def problem_outcomes(results: Location, model: str | None = None) -> pl.DataFrame:
    """One row per model and attempted problem: its final round, both verdicts, scores,
    and whether its data is broken."""
    return read_rows(results, model).outcomes


def _rates(outcomes: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    clean = ~pl.col("data_broken")
    # Rounds to success by the rule the run stopped on.
    solved_at = (
        pl.when(pl.col(PROTOCOL) == "public")
        .then(pl.col("solved_public_at"))
        .otherwise(pl.col("solved_at"))
    )
    table = (
        outcomes.group_by(by)
        .agg(
            pl.len().alias("problems"),
            pl.col("data_broken").sum().alias("broken_data"),
            pl.col("success").sum().alias("solved"),
            pl.col("success_public").sum().alias("solved_public"),
            pl.col("success").mean().alias("success_rate_all"),
            pl.col("success").filter(clean).mean().alias("success_rate_clean"),
            pl.col("success_public").mean().alias("public_success_rate_all"),
            pl.col("success_public").filter(clean).mean().alias("public_success_rate_clean"),
            solved_at.mean().alias("mean_rounds_to_success"),
            pl.col("partial_score").mean().alias("mean_partial_score"),
        )
        .sort(by)
    )
    return _with_protocol(table, outcomes)


def _final_failures(outcomes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(missing objects by type, failed conditions by type) of each problem's final round."""
    missing, failed = [], []
    for model, verdict in outcomes.select("model", "verdict").iter_rows():
        if verdict is None:
            continue
        data = json.loads(verdict)
        missing += [(model, obj.split(" ", 1)[0]) for obj in data.get("missing_objects", [])]
        failed += [(model, cond["type"]) for cond in data.get("failed_conditions", [])]

    def count(pairs: list[tuple[str, str]], name: str) -> pl.DataFrame:
        frame = pl.DataFrame(pairs, schema={"model": pl.String, name: pl.String}, orient="row")
        return (
            frame.group_by("model", name)
            .len("count")
            .sort("model", "count", name, descending=[False, True, False])
        )

    return count(missing, "object_type"), count(failed, "condition_type")


def success_by_round(outcomes: pl.DataFrame) -> pl.DataFrame:
    """Per model and round 1..max: problems solved by that round (ours and public), over
    every attempted problem (the model's most rounds: its run records', else its rows')."""
    frames = []
    for model, part in outcomes.group_by("model"):
        last = int(part["max_rounds"].max() or 0)  # type: ignore[arg-type]
        for k in range(1, last + 1):
            frames.append(
                {
                    "model": model[0],
                    "round": k,
                    "problems": part.height,
                    "solved_by_round": int((part["solved_at"] <= k).sum()),
                    "solved_public_by_round": int((part["solved_public_at"] <= k).sum()),
                }
            )
    schema = {
        "model": pl.String,
        "round": pl.Int64,
        "problems": pl.Int64,
        "solved_by_round": pl.Int64,
        "solved_public_by_round": pl.Int64,
    }
    table = pl.DataFrame(frames, schema=schema)
    rates = table.with_columns(
        success_rate_by_round=pl.col("solved_by_round") / pl.col("problems"),
        public_success_rate_by_round=pl.col("solved_public_by_round") / pl.col("problems"),
    ).sort("model", "round")
    return _with_protocol(rates, outcomes)


def feedback_fixes(outcomes: pl.DataFrame, rounds: pl.DataFrame) -> pl.DataFrame:
    """Per model: problems that failed round 1 and how many of them a later round fixed
    (ours and public). A problem without a round-1 row is in neither count."""
    first = rounds.filter(pl.col("round") == 1).select(
        "model", "problem_id", first_success="success", first_public="success_public"
    )
    joined = outcomes.join(first, on=["model", "problem_id"], how="inner")
    failed, failed_public = ~pl.col("first_success"), ~pl.col("first_public")
    fixes = (
        joined.group_by("model")
        .agg(
            failed.sum().alias("first_round_failures"),
            (failed & pl.col("success")).sum().alias("fixed_later"),
            failed_public.sum().alias("first_round_public_failures"),
            (failed_public & pl.col("success_public")).sum().alias("fixed_later_public"),
        )
        .with_columns(
            fixed_rate=pl.col("fixed_later") / pl.col("first_round_failures"),
            public_fixed_rate=pl.col("fixed_later_public") / pl.col("first_round_public_failures"),
        )
        .sort("model")
    )
    return _with_protocol(fixes, outcomes)


def outcome_kind() -> pl.Expr:
    """A round's outcome: `success`, else its error category, else failed_validation (ran
    without error, but objects are missing or conditions fail)."""
    return (
        pl.when(pl.col("success"))
        .then(pl.lit(SUCCESS))
        .otherwise(pl.col("error_category").fill_null(FAILED_VALIDATION))
    )


def error_transitions(rounds: pl.DataFrame) -> pl.DataFrame:
    """Per model: how often a round's outcome kind was followed by each kind in the next
    round of the same problem, summed over every pair of consecutive rounds."""
    kinds = rounds.select("model", "problem_id", "round", kind=outcome_kind())
    following = kinds.with_columns(pl.col("round") - 1).rename({"kind": "to_kind"})
    pairs = kinds.rename({"kind": "from_kind"}).join(
        following, on=["model", "problem_id", "round"], how="inner"
    )
    counts = pairs.group_by("model", "from_kind", "to_kind").len("count")
    return counts.with_columns(
        share_of_from=pl.col("count") / pl.col("count").sum().over("model", "from_kind")
    ).sort("model", "from_kind", "count", "to_kind", descending=[False, False, True, False])


def summary_tables(results: Location, model: str | None = None) -> dict[str, pl.DataFrame]:
    """The GeoBuild tables by name (the report command reuses them)."""
    rows = read_rows(results, model)
    outcomes = rows.outcomes
    missing, failed = _final_failures(outcomes)
    errors = (
        outcomes.group_by("model", PROTOCOL, "error_category", "error_category_public")
        .len("count")
        .sort("model", "count", "error_category", descending=[False, True, False])
    )
    return {
        "overall": _rates(outcomes, ["model"]),
        "by_category": _rates(outcomes, ["model", "category"]),
        "by_difficulty": _rates(outcomes, ["model", "difficulty"]),
        "error_categories": errors,
        "missing_objects": missing,
        "failed_conditions": failed,
        "error_accounting": error_accounting(outcomes, rows.rounds),
        "success_by_round": success_by_round(outcomes),
        "feedback_fixes": feedback_fixes(outcomes, rows.rounds),
        "error_transitions": error_transitions(rows.rounds),
        "problems": outcomes.drop("verdict", "max_rounds").sort("model", "problem_id"),
    }


# Table names (json keys, csv `# table:` names, --tables values) with their titles;
# HEADLINE is what is printed without --all or --tables.
TITLES = {
    "overall": "success % by our rule and by the public one (both scores >= 0.9), over every "
    "attempted problem (all) and over those with clean data, each only for runs that stopped "
    "on that rule (protocol geosee: ours; public: the public one; both for one-round runs); "
    "mean rounds to success, mean partial score (0.3 objects + 0.7 conditions, 0..1)",
    "by_category": "per problem category",
    "by_difficulty": "per difficulty",
    "error_categories": "final-round error categories (ours and the public benchmark's kind), "
    "% of the model's problems",
    "missing_objects": "missing objects by type (final round)",
    "failed_conditions": "failed conditions by type (final round)",
    "error_accounting": "error counts two ways: ours on each problem's final round (_final_ours) "
    "and the public benchmark's sums over every step (_steps_public: DSL errors, i.e. "
    "hallucinations, per problem, mean recovery steps, missing objects and failed conditions "
    "by the public verdict)",
    "success_by_round": "self-correction: problems solved by each round, % of every attempted "
    "problem",
    "feedback_fixes": "self-correction: round-1 failures fixed in a later round",
    "error_transitions": "self-correction: outcome of a round -> outcome of the next round "
    "(error category, failed_validation or success), summed over rounds",
    "problems": "one row per attempted problem",
}
HEADLINE = ("overall", "by_category", "by_difficulty", "error_categories")
# Share columns (0..1) and the percentage names they are shown under.
PERCENT_NAMES = {
    "success_rate_all": "success % (all)",
    "success_rate_clean": "success % (clean data)",
    "public_success_rate_all": "public success % (all)",
    "public_success_rate_clean": "public success % (clean data)",
    "success_rate_by_round": "success % by round (all)",
    "public_success_rate_by_round": "public success % by round (all)",
    "fixed_rate": "fixed %",
    "public_fixed_rate": "public fixed %",
    "share_of_from": "% of from_kind",
}


def shown_tables(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The tables as printed: rates as percentages, error categories with their share
    of each model's problems."""
    shown = {name: percent(t, PERCENT_NAMES) for name, t in tables.items()}
    problems = shown["problems"]
    shown["problems"] = problems.select("model", pl.exclude("model"))
    errors = shown["error_categories"]
    if not errors.is_empty():
        total = pl.col("count").sum().over("model")
        shown["error_categories"] = errors.with_columns(
            (pl.col("count") / total * 100).round(1).alias("problems %")
        )
    return shown


def print_tables(
    tables: dict[str, pl.DataFrame],
    fmt: str = "table",
    names: Sequence[str] = HEADLINE,
    csv_dir: Path | None = None,
) -> None:
    """Print the tables named `names` in the format `fmt`
    (pipelines.terminal.output.print_tables)."""
    shown = shown_tables(tables)
    print_output({n: shown[n] for n in names}, fmt, titles=TITLES, csv_dir=csv_dir)
    if fmt == "table" and len(names) < len(TITLES):
        print(f"\n(more: --all, or --tables with any of {', '.join(TITLES)})")
