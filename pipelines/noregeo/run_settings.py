"""A NoReGeo run's settings (one pydantic model, built alike by `evaluate` and the sweep and
written whole to the run record), and what a results folder holds: one choice of
answer-changing settings, and the rows its runs expected.

- `settings.json` in the model folder records what changes the answers (engine, repo,
  revision, sampling, grammar shapes): store.settings checks and writes it.
- Each run record (`runs/*.json`) lists the rows the run covers per task and setup
  (`expected_rows`); summaries compare them with the rows on disk, so a killed or partial
  run shows as missing rows instead of a smaller n.
- Each run record also holds the run's settings (`record_settings` rebuilds them in
  settings.json's shape): the second source a run is checked against, so losing
  settings.json does not let a run with other sampling join the folder.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.engines.stages.options import EngineOptions
from pipelines.noregeo.run_health import DEFAULT_MAX_ERROR_RATE
from store.records import RETRY_ERRORS
from store.storage import Location, children

log = logging.getLogger(__name__)

EXPECTED = "expected_rows"  # run-record field: {"<task>/<setup>": rows}


class EvaluateSettings(BaseModel):
    """Everything one NoReGeo evaluation is asked for, except the model, the items and the
    results root. Its fields go into the run record as they are."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    tasks: list[str] = Field(description="task IDs")
    setups: list[str] = Field(description="setups: text, dotted, full")
    limit: int | None = Field(default=None, ge=1, description="at most N items per task")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    engine_options: EngineOptions = Field(default_factory=EngineOptions)
    shard_rows: int = Field(default=256, ge=1, description="rows per result shard")
    retry_errors: str = Field(
        default="transient", description="which stored engine-error rows a rerun sends again"
    )
    max_error_rate: float = Field(
        default=DEFAULT_MAX_ERROR_RATE, ge=0.0, le=1.0, description="engine errors that fail a run"
    )

    @field_validator("retry_errors")
    @classmethod
    def _known_retry_policy(cls, value: str) -> str:
        if value not in RETRY_ERRORS:
            raise ValueError(f"retry_errors {value!r}; valid: {', '.join(RETRY_ERRORS)}")
        return value


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


def record_settings(record: dict[str, Any]) -> dict[str, Any]:
    """The settings.json fields a run record holds (folder_settings.settings' shape): the model's
    engine, repo and revision, the sampling, the grammar hashes and the item fields (absent
    from records written before item fields were recorded)."""
    model = record.get("model") or {}
    return {
        "engine": model.get("engine"),
        "repo": model.get("repo"),
        "revision": model.get("revision"),
        "sampling": record.get("sampling"),
        "grammar_sha256": record.get("grammar_sha256"),
        **(record.get("items") or {}),
    }


def recorded_settings(root: Location) -> list[tuple[Location, dict[str, Any]]]:
    """Each run record under a model folder with the settings it holds, oldest first. A
    record that cannot be read is named in a warning and skipped (it cannot vouch for
    anything)."""
    found = []
    for path in sorted(children(root / "runs", "*.json"), key=lambda p: p.name):
        try:
            record = json.loads(path.read_bytes().decode("utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            found.append((path, record_settings(record)))
        except (OSError, ValueError, AttributeError) as err:
            log.warning("run record %s cannot be read (%s): skipped", path, err)
    return found
