"""Atomic file writes: a reader sees the whole file or none of it, even after a SIGKILL.

Locally (and on NFS) the bytes go to a temporary file beside the target, are fsynced, and
are renamed over it. On an object store (store.storage.RemotePath) the write is one
upload of the whole object, which the store makes visible only once it completes: a
temporary key plus a copy would add a request and no guarantee.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from store.errors import no_room
from store.storage import Location, RemotePath

# Temporary files start with this prefix; readers skip them and writers sweep old ones.
TMP_PREFIX = ".tmp-"

# What open() asks for a new file; the umask then takes its bits away (0644 for umask 022).
FILE_MODE = 0o666

# Entered around the rename: yields whether the write may still happen (see run_lock).
Guard = Callable[[], AbstractContextManager[bool]]


def write_bytes_atomic(path: Location, data: bytes, guard: Guard | None = None) -> bool:
    """Write `path` whole or not at all; returns False when `guard` refused the rename (the
    temporary is removed, nothing is written)."""
    if isinstance(path, RemotePath):
        return _put_object(path, data, guard)
    try:
        return _write_local(path, data, guard)
    except OSError as err:
        # A full disk: the line the user sees says how much this write needed.
        full = no_room(err, path, len(data))
        if full is None:
            raise
        raise full from err


def _write_local(path: Path, data: bytes, guard: Guard | None) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=path.parent)
    try:
        # mkstemp makes the file 0600 whatever the umask: after the rename the results and
        # report pages would be unreadable to anyone else (a shared folder, a web server).
        os.fchmod(fd, FILE_MODE & ~process_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if guard is None:
            os.replace(tmp, path)
            return True
        with guard() as allowed:
            if allowed:
                os.replace(tmp, path)
                return True
        Path(tmp).unlink(missing_ok=True)
        return False
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def process_umask() -> int:
    """The process's umask, read without changing it where Linux shows it (/proc/self/status
    since 4.7): os.umask can only be read by setting it, which races with threads creating
    files meanwhile. Elsewhere it is set and restored."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _put_object(path: RemotePath, data: bytes, guard: Guard | None) -> bool:
    """The object-store write: the guard's check and the upload are two requests, so the
    guard narrows the window for a late write rather than closing it (store.run_lock)."""
    if guard is None:
        path.write_bytes(data)
        return True
    with guard() as allowed:
        if allowed:
            path.write_bytes(data)
        return allowed


def write_parquet_atomic(path: Location, table: pa.Table, guard: Guard | None = None) -> bool:
    """Write `table` as one zstd Parquet file, whole or not at all (as `write_bytes_atomic`),
    with a CRC32 in every page header, which readers verify (store.storage.parquet_file): a
    flipped byte in a page that still decodes (zstd keeps no checksum) would else change
    values without a sign."""
    return write_bytes_atomic(path, parquet_bytes(table), guard)


def parquet_bytes(table: pa.Table) -> bytes:
    """`table` as the bytes of one zstd Parquet file with page checksums (what
    `write_parquet_atomic` writes): for a writer that also records the file's hash."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_page_checksum=True)
    return bytes(sink.getvalue().to_pybytes())


def sweep_temporaries(root: Location) -> int:
    """Remove temporaries a killed writer left under `root`; returns how many (none on an
    object store, where writers make none)."""
    if isinstance(root, RemotePath):
        return 0
    removed = 0
    for tmp in root.rglob(f"{TMP_PREFIX}*"):
        tmp.unlink(missing_ok=True)
        removed += 1
    return removed
