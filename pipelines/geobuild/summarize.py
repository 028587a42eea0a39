"""`geobuild-summarize RESULTS`: GeoBuild metrics from result shards, as polars tables.

The denominator is every problem a run attempted, read from the run records, so a problem
whose every round errored, or that has no row at all (a run killed early), still counts as
unsolved. Error categories, missing objects and failed conditions are those of each
problem's final round. Partial score = 0.3 x object score + 0.7 x condition score.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import polars as pl

from geometry.dsl.validator import CONDITION_WEIGHT, OBJECT_WEIGHT
from pipelines.cli_args import results_location
from pipelines.terminal_output import add_table_arguments, chosen_tables, percent
from pipelines.terminal_output import print_tables as print_output
from store.errors import UsageError
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
    print_tables(summary_tables(args.results, args.model), args.format, names)
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
    seen: dict[str, dict[str, object]] = {}
    for record in children(model_root / "runs", "*.json"):
        for p in json.loads(record.read_text()).get("problems", []):
            seen[str(p["id"])] = {
                "problem_id": str(p["id"]),
                "category": str(p.get("category", "")),
                "difficulty": int(p.get("difficulty", 0)),
            }
    schema = {"problem_id": pl.String, "category": pl.String, "difficulty": pl.Int64}
    return pl.DataFrame(list(seen.values()), schema=schema)


def problem_outcomes(results: Location, model: str | None = None) -> pl.DataFrame:
    """One row per model and attempted problem: its final round, success, scores."""
    frames = []
    for root in _model_dirs(results, model):
        problems = attempted(root).with_columns(model_dir=pl.lit(root.name))
        read = read_shards(root, _COLUMNS)
        rows = read if read is not None else pl.DataFrame(schema={c: pl.String for c in _COLUMNS})
        final = (
            rows.with_columns(pl.col("round").cast(pl.Int64))
            .sort("round")
            .group_by("problem_id")
            .agg(
                pl.col("model").last(),
                pl.col("round").max().alias("rounds"),
                pl.col("success").cast(pl.Boolean).any().alias("success"),
                pl.col("round").filter(pl.col("success").cast(pl.Boolean)).min().alias("solved_at"),
                pl.col("error_category").last(),
                pl.col("verdict").last(),
                pl.col("object_score").cast(pl.Float64).last(),
                pl.col("condition_score").cast(pl.Float64).last(),
            )
        )
        frames.append(problems.join(final, on="problem_id", how="left"))
    if not frames:
        raise UsageError(f"{results}/{BENCHMARK} holds no model directories")
    out = pl.concat(frames, how="diagonal_relaxed")
    return out.with_columns(
        pl.col("model").fill_null(pl.col("model_dir").str.strip_prefix("model=")),
        pl.col("success").fill_null(False),
        pl.col("rounds").fill_null(0),
        # "not_run": attempted but no row (a run killed early); "none": ran without error.
        pl.when(pl.col("rounds").is_null())
        .then(pl.lit("not_run"))
        .otherwise(pl.col("error_category").fill_null("none"))
        .alias("error_category"),
        partial_score=(
            OBJECT_WEIGHT * pl.col("object_score").fill_null(0.0)
            + CONDITION_WEIGHT * pl.col("condition_score").fill_null(0.0)
        ),
    ).drop("model_dir")


def _rates(outcomes: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    return (
        outcomes.group_by(by)
        .agg(
            pl.len().alias("problems"),
            pl.col("success").sum().alias("solved"),
            pl.col("success").mean().alias("success_rate"),
            pl.col("solved_at").mean().alias("mean_rounds_to_success"),
            pl.col("partial_score").mean().alias("mean_partial_score"),
        )
        .sort(by)
    )


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


def summary_tables(results: Location, model: str | None = None) -> dict[str, pl.DataFrame]:
    """The GeoBuild tables by name (the report command reuses them)."""
    outcomes = problem_outcomes(results, model)
    missing, failed = _final_failures(outcomes)
    errors = (
        outcomes.group_by("model", "error_category")
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
        "problems": outcomes.drop("verdict").sort("model", "problem_id"),
    }


# Table names (json keys, csv `# table:` names, --tables values) with their titles;
# HEADLINE is what is printed without --all or --tables.
TITLES = {
    "overall": "success % over every attempted problem, mean rounds to success, mean partial "
    "score (0.3 objects + 0.7 conditions, 0..1)",
    "by_category": "per problem category",
    "by_difficulty": "per difficulty",
    "error_categories": "final-round error categories, % of the model's problems",
    "missing_objects": "missing objects by type (final round)",
    "failed_conditions": "failed conditions by type (final round)",
    "problems": "one row per attempted problem",
}
HEADLINE = ("overall", "by_category", "by_difficulty", "error_categories")


def shown_tables(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The tables as printed: success as a percentage, error categories with their share
    of each model's problems."""
    shown = {name: percent(t, {"success_rate": "success %"}) for name, t in tables.items()}
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
    tables: dict[str, pl.DataFrame], fmt: str = "table", names: Sequence[str] = HEADLINE
) -> None:
    """Print the tables named `names` in the format `fmt` (terminal_output.print_tables)."""
    shown = shown_tables(tables)
    print_output({n: shown[n] for n in names}, fmt, titles=TITLES)
    if fmt == "table" and len(names) < len(TITLES):
        print(f"\n(more: --all, or --tables with any of {', '.join(TITLES)})")
