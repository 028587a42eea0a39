"""The answer key of a human export: every page item's task, role and answer, and the
export's settings the import needs (the examination's pass mark, the overlap asked for).
It lies outside the pages folder, so the folder can be handed out whole."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.command_line.args import read_json_object
from pipelines.human.quality import DEFAULT_QUALIFICATION_PASS, ROLES, SCORED
from store.errors import UsageError

# The key holds {"items": {id: {task, role, answer[, answer_type, options]}}, "pages": ...};
# format 3: the scored role is `scored` (format 2 called it `exam`), pool items carry their
# answer type and options (they are not in --items).
KEY_FORMAT = 3
OLD_SCORED = "exam"


def default_key(out: Path) -> Path:
    """Where the key goes without `--key`: beside the pages folder, `<out>.key.json`."""
    out = out.resolve()
    return out.with_name(out.name + ".key.json")


@dataclass(frozen=True)
class Key:
    """What human-import reads of an export's key: each item's role, the pool items (not in
    --items) as item rows, the examination's pass mark and the overlap asked for."""

    roles: dict[str, str]
    pool: dict[str, dict[str, Any]]
    pass_mark: float
    overlap: int | None


def read_key(key: Path) -> Key:
    """An export's key file (format 2's `exam` role read as `scored`)."""
    data = read_json_object(key, "--key", ("items",))
    entries = data["items"]
    if not isinstance(entries, dict) or not all(
        isinstance(v, dict) and v.get("role") in (*ROLES, OLD_SCORED) for v in entries.values()
    ):
        raise UsageError(
            f"--key {key} is not a human-export key: its items need a role "
            f"({', '.join(ROLES)}); export again"
        )
    roles = {str(i): SCORED if v["role"] == OLD_SCORED else v["role"] for i, v in entries.items()}
    pool = {
        str(i): {
            "item_id": str(i),
            "task": v.get("task"),
            "answer": json.dumps(v["answer"]),
            "answer_type": v["answer_type"],
            "options": v.get("options") or [],
        }
        for i, v in entries.items()
        if "answer_type" in v and "answer" in v
    }
    pass_mark = data.get("qualification_pass")
    overlap = data.get("overlap")
    return Key(
        roles,
        pool,
        float(pass_mark) if isinstance(pass_mark, int | float) else DEFAULT_QUALIFICATION_PASS,
        overlap if isinstance(overlap, int) else None,
    )
