"""Answered rows held by the driver until a shard's worth is in, and written however the
run ends (NoReGeo's evaluate, GeoBuild's rounds).

An engine's scored rows reach the driver one engine batch at a time. Written by a Ray step
with `batch_size=shard_rows`, they waited in Ray's buffers until a whole shard was in, and
a Ctrl-C threw them away: a 250-row run of the real model on 2 cores showed 0/250 for
3.5 minutes and kept 0 rows (issue 39). Here the driver holds them, writes each full
shard at once, and writes the rest when the run ends: at its end, on an error, on Ctrl-C or
SIGTERM (from the main thread's unwinding, or from the signal watcher through
pipelines.terminal.interrupt.kept_on_exit, `close`, when the main thread is stuck inside Ray
or the signal came to Ray's processes too). Only rows still inside the engine are lost.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

# Seconds the signal watcher waits for a shard write under way before it writes the rows
# held (pipelines.terminal.interrupt.GRACE_S + this stays within the 5 s a Ctrl-C may take).
KEEP_WAIT_S = 1.5


class RowWriter(Protocol):
    """Writes rows as one shard (pipelines.noregeo.results.ShardWriter, GeoBuild's
    RoundWriter)."""

    def write_rows(self, rows: list[dict[str, Any]], /) -> int:
        """Write the rows as one atomic shard; the rows written (0 for a dead run's)."""
        ...


class HeldRows:
    """Rows to write in shards of `shard_rows`; thread-safe, so the signal watcher can
    write what is held while the main thread is blocked."""

    def __init__(self, writer: RowWriter, shard_rows: int) -> None:
        self.writer, self.shard_rows = writer, shard_rows
        self._rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._closed = False

    def add(self, rows: list[dict[str, Any]]) -> int:
        """Hold the rows; write each full shard. The rows written."""
        written = 0
        with self._lock:
            self._rows.extend(rows)
            while len(self._rows) >= self.shard_rows and not self._closed:
                shard, self._rows = self._rows[: self.shard_rows], self._rows[self.shard_rows :]
                written += self.writer.write_rows(shard)
        return written

    def flush(self) -> int:
        """Write what is held (less than a shard); the rows written."""
        with self._lock:
            return self._write_held()

    def close(self, wait_s: float = KEEP_WAIT_S) -> int:
        """Write what is held and nothing after (the signal watcher's save, before the
        interrupted line counts the shards on disk: a shard written after the count would
        make the line wrong); the rows written, 0 if a write under way has not ended within
        `wait_s`."""
        if not self._lock.acquire(timeout=wait_s):
            return 0
        try:
            written = self._write_held()
            self._closed = True
            return written
        finally:
            self._lock.release()

    def _write_held(self) -> int:
        """Write the rows held unless closed (the caller holds the lock); the rows written."""
        rows, self._rows = self._rows, []
        return self.writer.write_rows(rows) if rows and not self._closed else 0
