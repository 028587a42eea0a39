"""`results.json` beside a model's NoReGeo shards: the aggregates and where they came from.

Laid out after lm-eval's results file: `results` keyed by `<task>/<setup>`, `overall` keyed
by setup, each with n, accuracy % over every item (unanswered rows wrong, the paper's), its
95% bootstrap interval, accuracy % over the answered rows, the unanswered rows,
invalid-output % and engine-error % (summarize's numbers: invalid % is of the answered rows);
`config` (model, sampling, tasks, setups, limit) and `provenance` (the item table's seed,
counts and content hash; git commit, package versions; the run record it was written
after). `evaluate` rewrites it at the end of every run, over all the rows the folder holds.
"""

from __future__ import annotations

import hashlib
from typing import Any

import polars as pl

from geometry.item import SETUPS
from pipelines.noregeo.generate import MANIFEST, read_manifest
from pipelines.noregeo.run_settings import recorded_expectations
from pipelines.noregeo.summarize import accuracy_table, task_order
from pipelines.terminal.output import ranked
from store.records import model_dir
from store.results_file import (
    latest_run_record,
    percent_or_none,
    provenance,
    write_results_file,
)
from store.storage import Location

BENCHMARK = "noregeo"
# The run-record fields copied into `config`.
CONFIG_FIELDS = ("model", "sampling", "tasks", "setups", "limit")
# The aggregate columns of summarize.accuracy_table and their results.json names; shares
# become percentages.
METRICS = {
    "accuracy": "accuracy_pct",  # over every item, unanswered rows wrong (the paper's)
    "answered_accuracy": "answered_accuracy_pct",
    "ci_low": "ci95_low_pct",
    "ci_high": "ci95_high_pct",
    "invalid_rate": "invalid_pct",
    "engine_error_rate": "engine_error_pct",
}
DECIMALS = 4


def write_results_json(
    out: Location, model: str, results: pl.DataFrame, items: Location | None
) -> Location:
    """Write `<out>/noregeo/model=<slug>/results.json` atomically from the model's result
    rows `results` (summarize.load_results) and the item table `items`; returns its path."""
    root = model_dir(out, BENCHMARK, model)
    return write_results_file(root, results_document(root, results, items))


def results_document(
    root: Location, results: pl.DataFrame, items: Location | None
) -> dict[str, Any]:
    """The results.json object for the model folder `root`."""
    expected = recorded_expectations(root)
    # Keys in the order summarize prints: tasks as the benchmark lists them, then setups.
    orders = {"task": task_order(), "setup": SETUPS}
    per_cell = ranked(accuracy_table(results, ["task", "setup"]), orders)
    cells = {}
    for row in per_cell.iter_rows(named=True):
        cell = f"{row['task']}/{row['setup']}"
        cells[cell] = _metrics(row, expected.get(cell))
    per_setup = ranked(accuracy_table(results, ["setup"]), orders)
    overall = {
        row["setup"]: _metrics(row, _expected_in_setup(expected, row["setup"]))
        for row in per_setup.iter_rows(named=True)
    }
    record_name, record = latest_run_record(root, BENCHMARK)
    return {
        "results": cells,
        "overall": overall,
        "config": {k: record.get(k) for k in CONFIG_FIELDS},
        "provenance": {**provenance(record_name, record), "items": items_provenance(items)},
    }


def _metrics(row: dict[str, Any], expected: int | None) -> dict[str, Any]:
    metrics: dict[str, Any] = {"n": int(row["n"]), "unanswered": int(row["unanswered"])}
    if expected is not None:
        metrics["expected"] = expected
        metrics["missing"] = max(expected - int(row["n"]), 0)
    for column, name in METRICS.items():
        metrics[name] = percent_or_none(row[column], DECIMALS)
    return metrics


def _expected_in_setup(expected: dict[str, int], setup: str) -> int | None:
    counts = [n for cell, n in expected.items() if cell.rsplit("/", 1)[1] == setup]
    return sum(counts) if counts else None


def items_provenance(items: Location | None) -> dict[str, Any] | None:
    """The item table a run read: its path, seed, generator version, items per task and
    setup, the shards' combined content hash and the manifest file's own sha256."""
    if items is None or not (items / MANIFEST).is_file():
        return None
    manifest = read_manifest(items, keys=("counts",))
    return {
        "path": str(items),
        "seed": manifest.get("seed"),
        "generator_version": manifest.get("generator_version"),
        "counts": manifest["counts"],
        "content_sha256": manifest.get("content_sha256"),
        "manifest_sha256": hashlib.sha256((items / MANIFEST).read_bytes()).hexdigest(),
    }
