"""The item record: one row of the item table per (item, setup)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import pyarrow as pa

Setup = Literal["text", "dotted", "full"]
SETUPS: tuple[Setup, ...] = ("text", "dotted", "full")
IMAGE_SETUPS: tuple[Setup, ...] = ("dotted", "full")


@dataclass(frozen=True)
class Item:
    """Maps 1:1 onto a Parquet row of the item table (see DESIGN.md, NoReGeo items)."""

    item_id: str
    task: str
    task_name: str
    kind: str
    category: str
    answer_type: str
    options: list[str]
    setup: str
    system_prompt: str
    prompt: str
    image: bytes | None
    answer: str  # JSON text
    geometry: str  # JSON text: {"points": {...}, "params": {...}}
    pair_id: str | None
    seed: int
    generator_version: str

    def to_row(self) -> dict[str, Any]:
        """This item as a dict keyed like ITEM_SCHEMA's columns, one Parquet row."""
        return asdict(self)


ITEM_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("task", pa.string()),
        ("task_name", pa.string()),
        ("kind", pa.string()),
        ("category", pa.string()),
        ("answer_type", pa.string()),
        ("options", pa.list_(pa.string())),
        ("setup", pa.string()),
        ("system_prompt", pa.string()),
        ("prompt", pa.string()),
        ("image", pa.binary()),
        ("answer", pa.string()),
        ("geometry", pa.string()),
        ("pair_id", pa.string()),
        ("seed", pa.int64()),
        ("generator_version", pa.string()),
    ]
)
assert [f.name for f in fields(Item)] == ITEM_SCHEMA.names
