"""`results.json` beside a model's GeoBuild shards: geobuild-summarize's numbers and where
they came from.

`results` holds the overall success % by our rule and by the public one, each over every
attempted problem (`_all`) and over the problems with clean data (`_clean`), problems solved
(both rules), problems with broken data, mean rounds to success and mean partial score; the
same per category and per difficulty; the final-round error categories (count, % of
problems, the public benchmark's kind); and `self_correction`: success % by round, round-1
failures fixed later, and the outcome transitions between consecutive rounds. `config` holds
the model, sampling and loop settings (with the run's `protocol`) and `provenance` the run
record's (store.results_file). A rule's counts and rates are null where the run stopped on
the other rule (geobuild-summarize: `reported_rules`).
`geobuild` rewrites it at the end of every run, over all the rows the folder holds.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.geobuild.summarize import BENCHMARK, summary_tables
from store.records import model_dir
from store.results_file import (
    latest_run_record,
    percent_or_none,
    provenance,
    write_results_file,
)
from store.storage import Location

# The run-record fields copied into `config`.
CONFIG_FIELDS = ("model", "sampling", "lang", "feedback", "with_image", "max_rounds", "dataset")
DECIMALS = 4


def write_results_json(out: Location, model: str) -> Location:
    """Write `<out>/geobuild/model=<slug>/results.json` atomically; returns its path."""
    root = model_dir(out, BENCHMARK, model)
    tables = summary_tables(out, model)
    record_name, record = latest_run_record(root, BENCHMARK)
    (overall,) = tables["overall"].iter_rows(named=True)
    errors = tables["error_categories"].select("error_category", "error_category_public", "count")
    document = {
        "results": {
            "overall": _rates(overall),
            "by_category": _grouped(tables["by_category"], "category"),
            "by_difficulty": _grouped(tables["by_difficulty"], "difficulty"),
            "error_categories": {
                str(kind): {
                    "public_kind": public,
                    "count": int(count),
                    "problems_pct": percent_or_none(count / overall["problems"], DECIMALS),
                }
                for kind, public, count in errors.iter_rows()
            },
            "self_correction": _self_correction(tables),
            # Ours on the final round beside the public per-step sums (error_accounting.py).
            "error_accounting": next(iter(tables["error_accounting"].drop("model").to_dicts()), {}),
        },
        "config": {k: record.get(k) for k in CONFIG_FIELDS} | {"protocol": overall["protocol"]},
        "provenance": provenance(record_name, record),
    }
    return write_results_file(root, document)


def _grouped(table: pl.DataFrame, by: str) -> dict[str, dict[str, Any]]:
    return {str(row[by]): _rates(row) for row in table.iter_rows(named=True)}


def _self_correction(tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    by_round = [
        {
            "round": int(r["round"]),
            "solved": _count(r["solved_by_round"]),
            "solved_public": _count(r["solved_public_by_round"]),
            "success_pct_all": percent_or_none(r["success_rate_by_round"], DECIMALS),
            "public_success_pct_all": percent_or_none(r["public_success_rate_by_round"], DECIMALS),
        }
        for r in tables["success_by_round"].iter_rows(named=True)
    ]
    fixes: dict[str, Any] = {}
    for r in tables["feedback_fixes"].iter_rows(named=True):  # one row: this model's
        fixes = {
            "first_round_failures": _count(r["first_round_failures"]),
            "fixed_later": _count(r["fixed_later"]),
            "fixed_pct": percent_or_none(r["fixed_rate"], DECIMALS),
            "first_round_public_failures": _count(r["first_round_public_failures"]),
            "fixed_later_public": _count(r["fixed_later_public"]),
            "public_fixed_pct": percent_or_none(r["public_fixed_rate"], DECIMALS),
        }
    transitions = [
        {"from": r["from_kind"], "to": r["to_kind"], "count": int(r["count"])}
        for r in tables["error_transitions"].iter_rows(named=True)
    ]
    return {"success_by_round": by_round, "feedback_fixes": fixes, "transitions": transitions}


def _rates(row: dict[str, Any]) -> dict[str, Any]:
    mean_rounds, partial = row["mean_rounds_to_success"], row["mean_partial_score"]
    return {
        "problems": int(row["problems"]),
        "broken_data": int(row["broken_data"]),
        "protocol": row["protocol"],
        "solved": _count(row["solved"]),
        "solved_public": _count(row["solved_public"]),
        "success_pct_all": percent_or_none(row["success_rate_all"], DECIMALS),
        "success_pct_clean": percent_or_none(row["success_rate_clean"], DECIMALS),
        "public_success_pct_all": percent_or_none(row["public_success_rate_all"], DECIMALS),
        "public_success_pct_clean": percent_or_none(row["public_success_rate_clean"], DECIMALS),
        "mean_rounds_to_success": None if mean_rounds is None else round(mean_rounds, DECIMALS),
        "mean_partial_score": None if partial is None else round(partial, DECIMALS),
    }


def _count(value: int | None) -> int | None:
    """A count, or None where the run's stopping rule leaves it unreported."""
    return None if value is None else int(value)
