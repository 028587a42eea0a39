"""An append-only JSONL journal: one record per finished unit of work, durable as it lands.

`geobuild-solve` appends one record per solved problem and fsyncs it, so a killed run loses
only the problems still being solved. A SIGKILL mid-write can leave a torn last line (no
trailing newline, or text that is not JSON): the reader skips it, and `Journal` cuts it off
before appending so the next record starts on a line of its own. Lines that are JSON but
not an object with the key field are skipped too (with the count returned), never fatal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from store.errors import no_room

Record = dict[str, Any]


def read_journal(path: Path, key: str) -> tuple[dict[str, Record], int]:
    """Records by `key` (a later record of a key replaces an earlier one) and how many lines
    were unreadable (torn by a kill, or not records); ({}, 0) when the file is absent."""
    if not path.is_file():
        return {}, 0
    records: dict[str, Record] = {}
    skipped = 0
    for line in path.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            skipped += 1
            continue
        if not isinstance(record, dict) or not isinstance(record.get(key), str):
            skipped += 1
            continue
        records[record[key]] = record
    return records, skipped


def _cut_torn_tail(path: Path) -> None:
    """Drop the bytes after the last newline: a record a killed writer left half-written."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)
            f.flush()
            os.fsync(f.fileno())


class Journal:
    """Appends records to a JSONL file, each flushed and fsynced before `append` returns."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            _cut_torn_tail(path)
        self.path = path
        self._file = path.open("ab")

    def append(self, record: Record) -> None:
        """Write one record as one line and make it durable."""
        line = json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
        try:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as err:
            full = no_room(err, self.path, len(line))  # the line the user sees says the size
            if full is None:
                raise
            raise full from err

    def close(self) -> None:
        """Close the file (every record is already on disk)."""
        self._file.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
