"""A results folder's settings record: one choice of answer-changing settings per folder.

`settings.json` in the model folder records what changes the answers (engine, repo, revision,
sampling, grammar shapes). A run with other settings is refused: two runs with different
--max-tokens in one folder would otherwise be summed into one accuracy.

The file is one of two sources: each run record under `runs/` (store.records) holds the
same settings, and the benchmark checks them too (pipelines.noregeo.run_settings), so a
deleted settings.json is rebuilt from them rather than silently replaced by the next run's.
A settings.json that cannot be read is a UsageError naming it, never a traceback.
"""

from __future__ import annotations

import json
from typing import Any

from store.atomic import write_bytes_atomic
from store.errors import UsageError
from store.storage import Location

SETTINGS_FILE = "settings.json"


def read_settings(root: Location) -> dict[str, Any] | None:
    """`root`'s recorded settings; None when it has no settings.json. A file that is not a
    UTF-8 JSON object is a UsageError naming it and what to do."""
    path = root / SETTINGS_FILE
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, OSError) as err:
        reason = type(err).__name__ if isinstance(err, UnicodeDecodeError) else str(err)
        raise UsageError(
            f"{path} cannot be read ({reason.splitlines()[0] if reason else 'unreadable'}): "
            f"remove it to rebuild it from the run records in {root / 'runs'}, or use "
            "another --out"
        ) from err
    if not isinstance(stored, dict):
        raise UsageError(
            f"{path} is not a JSON object: remove it to rebuild it from the run records in "
            f"{root / 'runs'}, or use another --out"
        )
    return stored


def differences(
    stored: dict[str, Any], ours: dict[str, Any], keys: tuple[str, ...] | None = None
) -> list[str]:
    """`field=stored (now ours)` for each field where the two differ (only `keys`, when
    given)."""
    fields = keys if keys is not None else sorted(set(stored) | set(ours))
    return [
        f"{k}={stored.get(k)!r} (now {ours.get(k)!r})"
        for k in fields
        if stored.get(k) != ours.get(k)
    ]


def check_settings(
    root: Location, ours: dict[str, Any], keys: tuple[str, ...] | None = None
) -> None:
    """UsageError naming each field where `root`'s recorded settings differ from `ours`
    (only the fields in `keys`, when given)."""
    stored = read_settings(root)
    if stored is None:
        return
    differ = differences(stored, ours, keys)
    if differ:
        raise UsageError(
            f"{root} holds a run with other settings: {', '.join(differ)}; use another --out"
        )


def write_settings(root: Location, ours: dict[str, Any]) -> None:
    """Record `ours` as `root`'s settings.json, atomically; call it once the run's checks pass."""
    write_bytes_atomic(root / SETTINGS_FILE, json.dumps(ours, sort_keys=True).encode())
