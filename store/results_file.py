"""What the `results.json` writers of NoReGeo and GeoBuild share: the file name, the run
record it cites, the provenance fields copied from it, and the atomic write.

A run record (store.records.write_run_record) already holds the model config, sampling,
git commit and package versions; results.json copies them instead of collecting them again.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any

from store.atomic import write_bytes_atomic
from store.storage import Location, children

RESULTS_JSON = "results.json"
# Run-record fields copied into results.json's `provenance`.
# `prompt_canary`: the vllm engine's decoded prompt per setup
# (pipelines.engines.prompts.prompt_canary).
PROVENANCE_FIELDS = (
    "git_commit", "packages", "python", "platform", "started_utc", "argv", "prompt_canary",
)  # fmt: skip


def latest_run_record(root: Location, benchmark: str) -> tuple[str | None, dict[str, Any]]:
    """The name and content of the newest `benchmark` run record under `root`/runs,
    preferring this process's (its name carries the pid): the record of the run that just
    ended. (None, {}) when there is none."""
    records = sorted(children(root / "runs", "*.json"), key=lambda p: p.name)
    ours = [p for p in records if p.name.split("-")[1:2] == [str(os.getpid())]]
    for path in reversed(ours or records):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("benchmark") == benchmark:
            return path.name, record
    return None, {}


def provenance(record_name: str | None, record: dict[str, Any]) -> dict[str, Any]:
    """The run record's provenance fields, its file name and the time of writing."""
    return {
        **{k: record.get(k) for k in PROVENANCE_FIELDS},
        "run_record": record_name,
        "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def percent_or_none(share: float | None, decimals: int = 4) -> float | None:
    """A share (0..1) as a percentage; None for a missing share or NaN (JSON has no NaN)."""
    if share is None or math.isnan(share):
        return None
    return round(100 * share, decimals)


def write_results_file(root: Location, document: dict[str, Any]) -> Location:
    """Write `root`/results.json whole or not at all; returns its path."""
    path = root / RESULTS_JSON
    data = json.dumps(document, indent=2, allow_nan=False) + "\n"
    write_bytes_atomic(path, data.encode())
    return path
