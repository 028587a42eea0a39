"""`results.json` beside a model's GeoBuild shards: geobuild-summarize's numbers and where
they came from.

`results` holds the overall success % (over every attempted problem), problems solved,
mean rounds to success and mean partial score, the same per category and per difficulty,
and the final-round error categories (count and % of problems); `config` the model,
sampling and loop settings and `provenance` the run record's (pipelines.results_file).
`geobuild` rewrites it at the end of every run, over all the rows the folder holds.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.geobuild.summarize import BENCHMARK, summary_tables
from pipelines.results_file import (
    latest_run_record,
    percent_or_none,
    provenance,
    write_results_file,
)
from store.records import model_dir
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
    errors = tables["error_categories"]
    document = {
        "results": {
            "overall": _rates(overall),
            "by_category": _grouped(tables["by_category"], "category"),
            "by_difficulty": _grouped(tables["by_difficulty"], "difficulty"),
            "error_categories": {
                str(kind): {
                    "count": int(count),
                    "problems_pct": percent_or_none(count / overall["problems"], DECIMALS),
                }
                for kind, count in errors.select("error_category", "count").iter_rows()
            },
        },
        "config": {k: record.get(k) for k in CONFIG_FIELDS},
        "provenance": provenance(record_name, record),
    }
    return write_results_file(root, document)


def _grouped(table: pl.DataFrame, by: str) -> dict[str, dict[str, Any]]:
    return {str(row[by]): _rates(row) for row in table.iter_rows(named=True)}


def _rates(row: dict[str, Any]) -> dict[str, Any]:
    mean_rounds, partial = row["mean_rounds_to_success"], row["mean_partial_score"]
    return {
        "problems": int(row["problems"]),
        "solved": int(row["solved"]),
        "success_pct": percent_or_none(row["success_rate"], DECIMALS),
        "mean_rounds_to_success": None if mean_rounds is None else round(mean_rounds, DECIMALS),
        "mean_partial_score": None if partial is None else round(partial, DECIMALS),
    }
