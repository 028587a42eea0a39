"""Rows and batches into Ray Data blocks and back, with Ray Data's own code, as `map` and
`map_batches` convert them between two steps of a dataset (Arrow in between: a list of
parts can come back as a numpy array)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def block_of(rows: Iterable[Any] = (), batches: Iterable[dict[str, Any]] = ()) -> Any:
    """A block of `rows` (as `map` builds its output) or of UDF output `batches` (as
    `map_batches` does)."""
    from ray.data._internal.delegating_block_builder import DelegatingBlockBuilder

    builder = DelegatingBlockBuilder()
    for row in rows:
        builder.add(row)
    for batch in batches:
        builder.add_batch(batch)
    return builder.build()


def rows_of(block: Any) -> list[Any]:
    """The block's rows as `map` hands them to its function."""
    from ray.data.block import BlockAccessor

    return list(BlockAccessor.for_block(block).iter_rows(public_row_format=True))


def batch_of(block: Any, batch_format: str | None = "numpy") -> Any:
    """The block as the batch `map_batches` hands its function (numpy by default)."""
    from ray.data.block import BlockAccessor

    return BlockAccessor.for_block(block).to_batch_format(batch_format)
