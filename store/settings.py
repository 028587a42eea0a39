"""A results folder's settings record: one choice of answer-changing settings per folder.

`settings.json` in the model folder records what changes the answers (engine, repo, revision,
sampling, grammar shapes). A run with other settings is refused: two runs with different
--max-tokens in one folder would otherwise be summed into one accuracy.
"""

from __future__ import annotations

import json
from typing import Any

from store.atomic import write_bytes_atomic
from store.errors import UsageError
from store.storage import Location

SETTINGS_FILE = "settings.json"


def check_settings(
    root: Location, ours: dict[str, Any], keys: tuple[str, ...] | None = None
) -> None:
    """UsageError naming each field where `root`'s recorded settings differ from `ours`
    (only the fields in `keys`, when given)."""
    path = root / SETTINGS_FILE
    if not path.is_file():
        return
    stored = json.loads(path.read_text())
    fields = keys if keys is not None else sorted(set(stored) | set(ours))
    differ = [k for k in fields if stored.get(k) != ours.get(k)]
    if differ:
        shown = ", ".join(f"{k}={stored.get(k)!r} (now {ours.get(k)!r})" for k in differ)
        raise UsageError(f"{root} holds a run with other settings: {shown}; use another --out")


def write_settings(root: Location, ours: dict[str, Any]) -> None:
    """Record `ours` as `root`'s settings.json, atomically; call it once the run's checks pass."""
    write_bytes_atomic(root / SETTINGS_FILE, json.dumps(ours, sort_keys=True).encode())
