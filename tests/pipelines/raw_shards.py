"""Reading result shards raw, past the reader that keeps one row per request key: what
the fault tests count duplicates in."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from pipelines.shards import shard_files


def raw_keys(root: Path) -> list[str]:
    """Every row's request key in every shard under `root`, duplicates kept."""
    return [
        str(k)
        for f in shard_files(root)
        for k in pq.read_table(f, columns=["request_key"])[0].to_pylist()
    ]


def raw_duplicates(root: Path) -> int:
    """Rows beyond the first per request key in the raw shards under `root`."""
    keys = raw_keys(root)
    return len(keys) - len(set(keys))
