"""Reading result shards: the one function every reader of NoReGeo and GeoBuild shards uses.

- A shard that cannot be read (truncated, empty, not Parquet, lacking a column asked for)
  is named in a warning, moved to `<model dir>/quarantine/` under its path relative to the
  model directory with `/` spelled `__` (`setup=text__part-0a1b.parquet`), and skipped: its
  keys count as unfinished, so the next run recomputes them. One bad file never stops a
  reader, and it is kept for inspection rather than deleted.
- Rows are idempotent by request key: when several rows share one (a shard copied under
  another name, two jobs that wrote overlapping batches), readers keep exactly one and
  warn how many they dropped. The kept row is the first by (has an `engine_error`, shard
  path, row in shard): a row that got an answer beats one whose request failed, and
  otherwise the lexicographically smallest shard path wins, so every reader keeps the same
  row whatever order the files were written in.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl
import pyarrow as pa

from store.atomic import TMP_PREFIX
from store.storage import Location, move, parquet_file, relative_parts, sort_key

log = logging.getLogger(__name__)

QUARANTINE = "quarantine"
SHARD_GLOB = "part-*.parquet"
KEY = "request_key"
ERROR_COLUMN = "engine_error"  # rows with one lose to rows without for the same key
_SHARD, _ROW = "__shard", "__row"  # reader-only ordering columns, dropped before returning


def shard_files(root: Location) -> list[Location]:
    """Shards under `root`, sorted; temporaries and quarantined files left out."""
    found: list[Location] = [
        p
        for p in root.rglob(SHARD_GLOB)
        if not p.name.startswith(TMP_PREFIX) and QUARANTINE not in relative_parts(p, root)
    ]
    return sorted(found, key=sort_key)


def _model_dir(shard: Location, root: Location) -> Location:
    """The `model=<slug>` directory holding `shard` (`root` if there is none)."""
    return next((p for p in shard.parents if p.name.startswith("model=")), root)


def quarantine(shard: Location, root: Location, reason: str) -> Location | None:
    """Move an unreadable shard aside, warning with its name; None if it is already gone
    (another reader moved it first)."""
    model = _model_dir(shard, root)
    folder = model / QUARANTINE
    name = "__".join(relative_parts(shard, model))
    target, n = folder / name, 1
    while target.exists():  # the same shard written and corrupted again: keep both
        target, n = folder / f"{name}.{n}", n + 1
    folder.mkdir(parents=True, exist_ok=True)
    try:
        move(shard, target)
    except FileNotFoundError:
        return None
    log.warning(
        "unreadable result shard %s (%s): moved to %s; its rows count as unfinished and the "
        "next run recomputes them",
        shard,
        reason,
        target,
    )
    return target


def _read_one(shard: Location, columns: Sequence[str] | None, required: Sequence[str]) -> pa.Table:
    """`columns` (all when None) and `engine_error` if the shard has it; a shard lacking a
    `required` column is as unusable as a corrupt one, one lacking another asked-for column
    is read without it."""
    with parquet_file(shard) as f:
        names = f.schema_arrow.names
        missing = [c for c in required if c not in names]
        if missing:
            raise ValueError(f"no column(s) {', '.join(missing)}")
        if columns is None:
            return f.read()
        extra = [ERROR_COLUMN] if ERROR_COLUMN in names and ERROR_COLUMN not in columns else []
        return f.read(columns=[c for c in [*columns, *extra] if c in names])


def read_shards(
    root: Location,
    columns: Sequence[str] | None = None,
    key: str | None = KEY,
    optional: Sequence[str] = (),
) -> pl.DataFrame | None:
    """Every readable shard's rows under `root`, one row per `key` (no deduplication when
    `key` is None); None when no shard could be read. `optional` columns are returned too,
    null where a shard lacks them (e.g. `engine_error` in shards of engines without one).
    See the module docstring."""
    required = list(dict.fromkeys([*(columns or []), *([key] if key else [])]))
    wanted = None if columns is None else [*required, *optional]
    frames = []
    for index, shard in enumerate(shard_files(root) if root.exists() else []):
        try:
            table = _read_one(shard, wanted, required)
        except FileNotFoundError:
            continue  # moved or replaced since it was listed; the next read sees it
        except (pa.ArrowException, OSError, ValueError) as err:
            quarantine(shard, root, str(err).splitlines()[0] if str(err) else type(err).__name__)
            continue
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        frames.append(
            frame.with_columns(
                pl.lit(index, pl.Int64).alias(_SHARD), pl.int_range(pl.len()).alias(_ROW)
            )
        )
    if not frames:
        return None
    rows = pl.concat(frames, how="diagonal_relaxed")  # older shards may lack columns
    if key is not None:
        rows = _one_row_per_key(rows, key, root)
    for name in optional:
        if name not in rows.columns:  # no shard had it
            rows = rows.with_columns(pl.lit(None, pl.String).alias(name))
    keep = rows.columns if columns is None else list(dict.fromkeys([*columns, *optional]))
    return rows.sort(_SHARD, _ROW).select([c for c in keep if c not in (_SHARD, _ROW)])


def _one_row_per_key(rows: pl.DataFrame, key: str, root: Location) -> pl.DataFrame:
    has_error = (
        pl.col(ERROR_COLUMN).is_not_null() if ERROR_COLUMN in rows.columns else pl.lit(False)
    )
    keyed = rows.filter(pl.col(key).is_not_null())
    unique = (
        keyed.with_columns(has_error.alias("__error"))
        .sort("__error", _SHARD, _ROW)
        .unique(subset=[key], keep="first", maintain_order=True)
        .drop("__error")
    )
    dropped = keyed.height - unique.height
    if dropped:
        log.warning(
            "%d duplicate row(s) by %s under %s dropped: kept one row per key (a row without "
            "%s first, then the smallest shard path)",
            dropped,
            key,
            root,
            ERROR_COLUMN,
        )
    # Rows without a key cannot be duplicates of anything; they stay as they are.
    return pl.concat([unique, rows.filter(pl.col(key).is_null())], how="vertical_relaxed")
