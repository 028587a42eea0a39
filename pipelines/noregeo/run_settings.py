"""What a NoReGeo results folder holds: one choice of answer-changing settings, and the rows
its runs expected.

- `settings.json` in the model folder records what changes the answers (engine, repo,
  revision, sampling, grammar shapes): store.settings checks and writes it.
- Each run record (`runs/*.json`) lists the rows the run covers per task and setup
  (`expected_rows`); summaries compare them with the rows on disk, so a killed or partial
  run shows as missing rows instead of a smaller n.
"""

from __future__ import annotations

import json
from typing import Any

from store.storage import Location, children

EXPECTED = "expected_rows"  # run-record field: {"<task>/<setup>": rows}


def expected_rows(
    manifest: dict[str, Any], tasks: list[str], setups: list[str], limit: int | None
) -> dict[str, int]:
    """Rows a run of these tasks/setups/limit covers, per `<task>/<setup>`, from the item
    table's manifest counts (evaluate keeps an item when its index is below the limit)."""
    counts = manifest["counts"]
    return {
        f"{task}/{setup}": min(int(counts[task][setup]), limit if limit is not None else 10**9)
        for task in tasks
        for setup in setups
        if setup in counts.get(task, {})
    }


def recorded_expectations(root: Location) -> dict[str, int]:
    """Rows expected per `<task>/<setup>` by every run recorded under a model folder: the
    largest count any run asked for (limits only grow the item prefix a run covers)."""
    expected: dict[str, int] = {}
    for record in children(root / "runs", "*.json"):
        try:
            rows = json.loads(record.read_text()).get(EXPECTED) or {}
        except (OSError, ValueError):
            continue
        for cell, n in rows.items():
            expected[cell] = max(expected.get(cell, 0), int(n))
    return expected


def recorded_model_name(root: Location) -> str:
    """The model name a model folder's run records give (its folder name's slug if none)."""
    for record in children(root / "runs", "*.json"):
        try:
            name = (json.loads(record.read_text()).get("model") or {}).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if name:
            return str(name)
    return root.name.removeprefix("model=")
