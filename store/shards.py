"""Reading result shards: the one function every reader of NoReGeo and GeoBuild shards uses.

- A shard that cannot be read (truncated, empty, not Parquet, lacking a column asked for)
  is named in a warning, moved to `<model dir>/quarantine/` under its path relative to the
  model directory with `/` spelled `__` (`setup=text__part-0a1b.parquet`), and skipped: its
  keys count as unfinished, so the next run recomputes them. One bad file never stops a
  reader, and it is kept for inspection rather than deleted.
- A shard is also quarantined when a page fails its checksum (store.atomic writes one per
  page), when a column has another type than the reader's `schema` says (a `correct`
  column of strings crashed every summary), or when a row has a null key (its rows cannot
  be matched with a request, so they would be counted without one).
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


# Arrow types that hold the same values: polars writes large_string where pyarrow writes
# string, and either is a valid shard.
_SAME_VALUES = {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}


def _plain_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_large_list(kind):
        return pa.list_(_plain_type(kind.value_type))
    if pa.types.is_list(kind):
        return pa.list_(_plain_type(kind.value_type))
    return _SAME_VALUES.get(kind, kind)


def wrong_types(actual: pa.Schema, expected: pa.Schema) -> list[str]:
    """`column: type (expected type)` for each column of `actual` that `expected` types
    otherwise (columns `expected` lacks, or `actual` lacks, are not compared)."""
    wrong = []
    for field in actual:
        index = expected.get_field_index(field.name)
        if index < 0:
            continue
        want = expected.field(index).type
        # An all-null column (polars writes one as type null) holds no value of a wrong type.
        if not pa.types.is_null(field.type) and _plain_type(field.type) != _plain_type(want):
            wrong.append(f"{field.name}: {field.type} (expected {want})")
    return wrong


def _read_one(
    shard: Location,
    columns: Sequence[str] | None,
    required: Sequence[str],
    schema: pa.Schema | None,
    key: str | None,
) -> pa.Table:
    """`columns` (all when None) and `engine_error` if the shard has it; a shard lacking a
    `required` column is as unusable as a corrupt one, one lacking another asked-for column
    is read without it. ValueError for a column typed against `schema` or a null `key`."""
    with parquet_file(shard) as f:
        names = f.schema_arrow.names
        missing = [c for c in required if c not in names]
        if missing:
            raise ValueError(f"no column(s) {', '.join(missing)}")
        wrong = wrong_types(f.schema_arrow, schema) if schema is not None else []
        if wrong:
            raise ValueError(f"wrongly typed column(s) {'; '.join(wrong)}")
        if columns is None:
            table = f.read()
        else:
            extra = [ERROR_COLUMN] if ERROR_COLUMN in names and ERROR_COLUMN not in columns else []
            table = f.read(columns=[c for c in [*columns, *extra] if c in names])
    if key is not None and table[key].null_count:
        raise ValueError(f"{table[key].null_count} row(s) with a null {key}")
    return table


def read_shards(
    root: Location,
    columns: Sequence[str] | None = None,
    key: str | None = KEY,
    optional: Sequence[str] = (),
    schema: pa.Schema | None = None,
) -> pl.DataFrame | None:
    """Every readable shard's rows under `root`, one row per `key` (no deduplication when
    `key` is None); None when no shard could be read. `optional` columns are returned too,
    null where a shard lacks them (e.g. `engine_error` in shards of engines without one).
    With `schema` (the benchmark's result schema), a shard whose columns are typed
    otherwise is quarantined. See the module docstring."""
    required = list(dict.fromkeys([*(columns or []), *([key] if key else [])]))
    wanted = None if columns is None else [*required, *optional]
    frames = []
    for index, shard in enumerate(shard_files(root) if root.exists() else []):
        try:
            table = _read_one(shard, wanted, required, schema, key)
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
    # Shards with a null key were quarantined (_read_one): every row here has one.
    unique = (
        rows.with_columns(has_error.alias("__error"))
        .sort("__error", _SHARD, _ROW)
        .unique(subset=[key], keep="first", maintain_order=True)
        .drop("__error")
    )
    dropped = rows.height - unique.height
    if dropped:
        log.warning(
            "%d duplicate row(s) by %s under %s dropped: kept one row per key (a row without "
            "%s first, then the smallest shard path)",
            dropped,
            key,
            root,
            ERROR_COLUMN,
        )
    return unique
