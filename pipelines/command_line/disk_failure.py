"""One line for a local disk that fills up (or turns read-only) under a running command.

Issue 38: a full disk mid-run printed a 45-line Ray traceback (`UserCodeException ...
OSError: [Errno 28]`) and exit 1. The data held (shards are written whole, store.atomic, so
the same command resumes), the message did not. `disk_failure` finds such an OSError in an
error's chain, a Ray task's included, and says which folder, the bytes the write needed
and the bytes free there.

The bytes needed are known where our files are written: store.atomic (every shard, JSON
file, sample log, report page) and store.journal (geobuild-solve) put them in the error
(store.errors.no_room). They are not known, and the line leaves them out, for a write of
someone else's code: Ray spilling objects or writing its logs, a model download, torch or
transformers saving a checkpoint, and the creation of a folder (a block, whatever holds).
"""

from __future__ import annotations

import contextlib
import errno
import re
import shutil
from pathlib import Path

from store.errors import bytes_needed, error_chain

# Errors that no retry heals until someone frees space or picks another folder.
_FULL = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded"}
_FULL_TOO = {errno.EFBIG: "file too large for the file system", errno.EROFS: "read-only"}
_REASONS = {**_FULL, **_FULL_TOO}
# An OSError as Python prints it, in a remote traceback's text.
_ERRNO_TEXT = re.compile(r"\[Errno (?P<errno>\d+)\] (?P<reason>[^:\n]*)(?:: '(?P<path>[^'\n]+)')?")


def disk_failure(err: BaseException, folders: list[Path]) -> str | None:
    """One line naming the folder being written, the bytes the write needed when known and
    the bytes free there, when `err` (or an error it was raised from) is a full or read-only
    disk; None otherwise. `folders` are the command's output folders, for when the OSError
    names no file."""
    found = _disk_error(err)
    if found is None:
        return None
    reason = _REASONS.get(found.errno or 0, found.strerror or "OSError")
    needed = bytes_needed(found.strerror or "")
    target = Path(found.filename) if isinstance(found.filename, str) else None
    folder = _existing_parent(target) if target is not None else None
    if folder is None and folders:
        folder = _existing_parent(folders[0])
    room = [] if needed is None else [f"needs about {amount(needed)}"]
    if folder is None:
        return f"{reason} on the device being written" + "".join(f"; {r}" for r in room)
    with contextlib.suppress(OSError):  # a folder that vanished: the line without it
        room.append(f"{amount(shutil.disk_usage(folder).free)} free there")
    return f"{reason} writing under {folder}" + (f"; {', '.join(room)}" if room else "")


def amount(size: int) -> str:
    """`size` bytes as a reader takes them in, the exact count kept for a script:
    `13021 bytes (12.7 KiB)`.

    >>> amount(512), amount(13021), amount(3 * 2**30)
    ('512 bytes', '13021 bytes (12.7 KiB)', '3221225472 bytes (3.0 GiB)')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size} bytes ({size / scale:.1f} {unit})"
    return f"{size} bytes"


def _disk_error(err: BaseException) -> OSError | None:
    """The first full-disk OSError in `err`'s chain. Ray Data's UserCodeException reaches
    the driver without the worker's OSError object, only its traceback text (measured with
    Ray 2.60), so that text is read too: `OSError: [Errno 28] ...: 'path'`."""
    for current in error_chain(err):
        if isinstance(current, OSError) and current.errno in _REASONS:
            return current
        text = f"{current}\n{getattr(current, 'traceback_str', '')}"
        # The last: a traceback prints an error's cause before it, and the error raised
        # last is the one naming the file and its size (store.errors.no_room).
        found = [m for m in _ERRNO_TEXT.finditer(text) if int(m["errno"]) in _REASONS]
        if found:
            return OSError(int(found[-1]["errno"]), found[-1]["reason"], found[-1]["path"])
    return None


def _existing_parent(path: Path) -> Path | None:
    """`path` if it is a folder, else its nearest existing parent folder."""
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return None
