"""Where `geobuild-solve --out RESULTS` keeps its audit, and how to read the programs it
persisted: shared by the command (pipelines/geobuild/solve.py) and the solver engine
(actors/solver_engine.py), which replies with those programs instead of solving again.
"""

from __future__ import annotations

import json
from pathlib import Path

from store.journal import read_journal
from store.settings import SETTINGS_FILE

AUDIT_DIR = "audit"  # RESULTS/audit/: `report RESULTS` finds RESULTS/audit/audit.csv there
JOURNAL = "results.jsonl"


def find_audit(path: Path) -> Path | None:
    """The audit folder of a geobuild-solve results root given as RESULTS or RESULTS/audit;
    None when `path` holds no audit (a data set, say)."""
    for folder in (path / AUDIT_DIR, path):
        if (folder / SETTINGS_FILE).is_file() and (folder / JOURNAL).is_file():
            return folder
    return None


def audit_programs(audit: Path) -> tuple[str, dict[str, str | None]]:
    """The data file an audit solved, and the program of each problem in its journal (None
    for the unsolved ones): what `geobuild --engine solver --model RESULTS` replies."""
    settings = json.loads((audit / SETTINGS_FILE).read_text(encoding="utf-8"))
    records, _ = read_journal(audit / JOURNAL, "id")
    programs = {
        i: r.get("program") if r.get("status") == "solved" else None for i, r in records.items()
    }
    return str(settings["dataset"]), programs
