"""Reading result shards raw, past the reader that keeps one row per request key: what
the fault tests count duplicates in."""

from __future__ import annotations

from store.shards import shard_files
from store.storage import Location, read_table


def raw_keys(root: Location) -> list[str]:
    """Every row's request key in every shard under `root`, duplicates kept."""
    return [
        str(k) for f in shard_files(root) for k in read_table(f, ["request_key"])[0].to_pylist()
    ]


def raw_duplicates(root: Location) -> int:
    """Rows beyond the first per request key in the raw shards under `root`."""
    keys = raw_keys(root)
    return len(keys) - len(set(keys))
