"""`results.json` beside a model's NoReGeo shards: the aggregates and where they came from.

Laid out after lm-eval's results file: `results` keyed by `<task>/<setup>`, `overall` keyed
by setup, each with n, accuracy %, its 95% bootstrap interval, invalid-output % and
engine-error % (summarize's numbers: engine errors are left out of accuracy and invalid %);
`config` (model, sampling, tasks, setups, limit) and `provenance` (the item table's seed,
counts and content hash; git commit, package versions; the run record it was written
after). `evaluate` rewrites it at the end of every run, over all the rows the folder holds.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from typing import Any

import polars as pl

from geometry.item import SETUPS
from pipelines.noregeo.generate import MANIFEST, read_manifest
from pipelines.noregeo.run_settings import EXPECTED, recorded_expectations
from pipelines.noregeo.summarize import accuracy_table, task_order
from pipelines.terminal_output import ranked
from store.atomic import write_bytes_atomic
from store.records import model_dir
from store.storage import Location, children

RESULTS_JSON = "results.json"
BENCHMARK = "noregeo"
# The run-record fields copied into `config` and into `provenance`.
CONFIG_FIELDS = ("model", "sampling", "tasks", "setups", "limit")
PROVENANCE_FIELDS = ("git_commit", "packages", "python", "platform", "started_utc", "argv")
# The aggregate columns of summarize.accuracy_table and their results.json names; shares
# become percentages.
METRICS = {
    "accuracy": "accuracy_pct",
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
    document = results_document(root, results, items)
    path = root / RESULTS_JSON
    data = json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n"
    write_bytes_atomic(path, data.encode())
    return path


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
    record_name, record = latest_run_record(root)
    return {
        "results": cells,
        "overall": overall,
        "config": {k: record.get(k) for k in CONFIG_FIELDS},
        "provenance": {
            **{k: record.get(k) for k in PROVENANCE_FIELDS},
            "run_record": record_name,
            "items": items_provenance(items),
            "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }


def _metrics(row: dict[str, Any], expected: int | None) -> dict[str, Any]:
    metrics: dict[str, Any] = {"n": int(row["n"])}
    if expected is not None:
        metrics["expected"] = expected
        metrics["missing"] = max(expected - int(row["n"]), 0)
    for column, name in METRICS.items():
        metrics[name] = _percent(row[column])
    return metrics


def _expected_in_setup(expected: dict[str, int], setup: str) -> int | None:
    counts = [n for cell, n in expected.items() if cell.rsplit("/", 1)[1] == setup]
    return sum(counts) if counts else None


def _percent(share: float | None) -> float | None:
    if share is None or math.isnan(share):
        return None
    return round(100 * share, DECIMALS)


def latest_run_record(root: Location) -> tuple[str | None, dict[str, Any]]:
    """The name and content of the newest run record under `root`/runs, preferring this
    process's (its name carries the pid): the record of the run that just ended."""
    records = sorted(children(root / "runs", "*.json"), key=lambda p: p.name)
    ours = [p for p in records if p.name.split("-")[1:2] == [str(os.getpid())]]
    for path in reversed(ours or records):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and EXPECTED in record:
            return path.name, record
    return None, {}


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
