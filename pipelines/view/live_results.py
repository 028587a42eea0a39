"""The rows of a results location as they land: each shard read once, by path.

Result shards are written atomically under names made from their rows' request keys
(pipelines.noregeo.results.ShardWriter), so a listed shard is complete and never changes:
a refresh lists the shards and reads only the new ones. Unlike `summarize`, which moves an
unreadable shard to quarantine, a viewer is read-only: such a shard is listed with its
reason and left where it is. Prompts are kept once per (item, setup), not once per model.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from pipelines.noregeo.results import RESULT_SCHEMA
from pipelines.noregeo.run_settings import recorded_expectations
from store.shards import ERROR_COLUMN, KEY, QUARANTINE, shard_files, wrong_types
from store.storage import Location, parquet_file, relative_parts

BENCHMARK = "noregeo"
# What a row keeps in memory; prompts go to their own table (one per item and setup).
ROW_COLUMNS = [
    "model", "task", "setup", "item_id", KEY, "answer", "generated_text", "valid", "correct",
    ERROR_COLUMN,
]  # fmt: skip
PROMPT_COLUMNS = ["item_id", "setup", "prompt"]
VERDICTS = ("right", "wrong", "invalid", "unanswered")


def verdict_expr() -> pl.Expr:
    """right / wrong / invalid (a reply the grammar's reader refused) / unanswered (an
    engine error: no reply to read), as the paper counts them: only `right` scores."""
    return (
        pl.when(pl.col(ERROR_COLUMN).is_not_null())
        .then(pl.lit("unanswered"))
        .when(~pl.col("valid").fill_null(False))
        .then(pl.lit("invalid"))
        .when(pl.col("correct").fill_null(False))
        .then(pl.lit("right"))
        .otherwise(pl.lit("wrong"))
    )


@dataclass
class Snapshot:
    """What the pages show at one refresh."""

    rows: pl.DataFrame  # ROW_COLUMNS + verdict, one row per request key
    prompts: pl.DataFrame  # item_id, setup, prompt
    unreadable: dict[str, str]  # shard -> why it was skipped
    expected: dict[str, int]  # model slug folder -> rows its runs asked for
    shards: int
    refreshed_at: float = field(default_factory=time.time)


class LiveResults:
    """A results location read incrementally; `snapshot()` refreshes at most every
    `refresh_s` seconds, so many page loads list the store once."""

    def __init__(self, results: Location, refresh_s: float = 2.0) -> None:
        self.results, self.refresh_s = results, refresh_s
        self.root = results / BENCHMARK
        self._frames: dict[str, pl.DataFrame] = {}
        self._prompts: dict[tuple[str, str], str] = {}
        self._unreadable: dict[str, str] = {}
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._listed = float("-inf")

    def snapshot(self) -> Snapshot:
        """The rows as of the last refresh (refreshing first when it is older than
        `refresh_s`)."""
        with self._lock:
            if self._snapshot is None or time.monotonic() - self._listed >= self.refresh_s:
                self._snapshot = self._refresh()
                self._listed = time.monotonic()
            return self._snapshot

    def _refresh(self) -> Snapshot:
        files = shard_files(self.root) if self.root.exists() else []
        names = {str(f): f for f in files}
        for gone in set(self._frames) - set(names):  # replaced or removed by its writer
            del self._frames[gone]
        for name, shard in names.items():
            if name in self._frames or name in self._unreadable:
                continue
            try:
                self._frames[name] = self._read(shard)
            except FileNotFoundError:
                continue  # moved since it was listed; the next refresh sees where
            except (pa.ArrowException, OSError, ValueError, KeyError) as err:
                self._unreadable[name] = str(err).splitlines()[0] if str(err) else repr(err)
        # In the order of the shards' paths, as store.shards keeps the first row per key.
        ordered = [
            self._frames[n].with_columns(pl.lit(i).alias("__order"))
            for i, n in enumerate(names)
            if n in self._frames
        ]
        rows = _one_row_per_key(ordered)
        prompts = pl.DataFrame(
            [(i, s, p) for (i, s), p in self._prompts.items()],
            schema={"item_id": pl.String, "setup": pl.String, "prompt": pl.String},
            orient="row",
        )
        return Snapshot(rows, prompts, dict(self._unreadable), self._expected(), len(files))

    def _read(self, shard: Location) -> pl.DataFrame:
        with parquet_file(shard) as f:
            schema = f.schema_arrow
            wrong = wrong_types(schema, RESULT_SCHEMA)
            if wrong:
                raise ValueError(f"not a result shard: {'; '.join(wrong)}")
            missing = [c for c in ROW_COLUMNS if c not in schema.names and c != ERROR_COLUMN]
            if missing:
                raise ValueError(f"not a result shard: no column(s) {', '.join(missing)}")
            present = [c for c in ROW_COLUMNS if c in schema.names]
            table = f.read(columns=present + [c for c in PROMPT_COLUMNS if c not in present])
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        for item_id, setup, prompt in frame.select(PROMPT_COLUMNS).iter_rows():
            self._prompts.setdefault((item_id, setup), prompt)
        if ERROR_COLUMN not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(ERROR_COLUMN))
        return frame.select(ROW_COLUMNS)

    def _expected(self) -> dict[str, int]:
        """Rows each model's runs asked for (their run records), by model folder name."""
        if not self.root.exists():
            return {}
        out = {}
        for folder in self.root.iterdir():
            if folder.name.startswith("model=") and QUARANTINE not in relative_parts(
                folder, self.root
            ):
                out[folder.name.removeprefix("model=")] = sum(
                    recorded_expectations(folder).values()
                )
        return out


def _one_row_per_key(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """One row per request key, a row with an answer before one whose request failed (as
    store.shards keeps them), with its verdict."""
    if not frames:
        types = {c: pl.Boolean if c in ("valid", "correct") else pl.String for c in ROW_COLUMNS}
        return pl.DataFrame(schema={**types, "verdict": pl.String})
    rows = pl.concat(frames, how="diagonal_relaxed")
    rows = (
        rows.sort(pl.col(ERROR_COLUMN).is_not_null(), "__order")
        .unique(subset=[KEY], keep="first", maintain_order=True)
        .drop("__order")
    )
    return rows.with_columns(verdict_expr().alias("verdict"))


def answer_text(value: str | None) -> str:
    """A gold or parsed answer's JSON, as its value: `yes`, `12.5`, `[3, 4]`."""
    if value is None:
        return ""
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return json.dumps(parsed.get("answer", parsed) if isinstance(parsed, dict) else parsed)
