"""The items people answer (paper Appendix C): the dotted-setup rows of an item table, with
the question as people read it. human-export puts them on pages, human-import scores the
votes on them as the model `human`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from geometry.prompts import format_instruction
from pipelines.noregeo.generate import SHARD_GLOB
from store.errors import UsageError

HUMAN = "human"
SETUP = "dotted"


def dotted_items(items: Path) -> list[dict[str, Any]]:
    """The dotted-setup rows of an item directory, sorted by item_id."""
    files = sorted(items.glob(SHARD_GLOB)) if items.is_dir() else []
    if not files:
        raise UsageError(f"--items {items} holds no item table; create one with `generate`")
    rows = [r for f in files for r in _item_rows(f) if r["setup"] == SETUP]
    if not rows:
        raise UsageError(f"--items {items} has no {SETUP} setup; generate with --setups dotted")
    return sorted(rows, key=lambda r: r["item_id"])


def _item_rows(path: Path) -> list[dict[str, Any]]:
    try:
        return list(pq.read_table(path).to_pylist())
    except (OSError, pa.ArrowException) as err:
        raise UsageError(f"--items shard {path} is not a readable item table: {err}") from err


def question_text(row: dict[str, Any]) -> str:
    """The item's question without the JSON-format instruction meant for models."""
    instruction = format_instruction(row["answer_type"], row["options"] or ())
    return str(row["prompt"]).removesuffix(instruction).strip()
