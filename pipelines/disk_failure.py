"""One line for a local disk that fills up (or turns read-only) under a running command.

Issue 38: a full disk mid-run printed a 45-line Ray traceback (`UserCodeException ...
OSError: [Errno 28]`) and exit 1. The data held (shards are written whole, store.atomic, so
the same command resumes), the message did not. `disk_failure` finds such an OSError in an
error's chain, a Ray task's included, and says which folder and how much room is left.
"""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

from store.errors import error_chain

# Errors that no retry heals until someone frees space or picks another folder.
_FULL = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded"}
_FULL_TOO = {errno.EFBIG: "file too large for the file system", errno.EROFS: "read-only"}
_REASONS = {**_FULL, **_FULL_TOO}
# An OSError as Python prints it, in a remote traceback's text.
_ERRNO_TEXT = re.compile(r"\[Errno (?P<errno>\d+)\] (?P<reason>[^:\n]*)(?:: '(?P<path>[^'\n]+)')?")


def disk_failure(err: BaseException, folders: list[Path]) -> str | None:
    """One line naming the folder being written and the bytes free there when `err` (or an
    error it was raised from) is a full or read-only disk; None otherwise. `folders` are
    the command's output folders, for when the OSError names no file."""
    found = _disk_error(err)
    if found is None:
        return None
    reason = _REASONS.get(found.errno or 0, found.strerror or "OSError")
    target = Path(found.filename) if isinstance(found.filename, str) else None
    folder = _existing_parent(target) if target is not None else None
    if folder is None and folders:
        folder = _existing_parent(folders[0])
    if folder is None:
        return f"{reason} on the device being written"
    try:
        free = f"; {shutil.disk_usage(folder).free} bytes free there"
    except OSError:
        free = ""
    return f"{reason} writing under {folder}{free}"


def _disk_error(err: BaseException) -> OSError | None:
    """The first full-disk OSError in `err`'s chain. Ray Data's UserCodeException reaches
    the driver without the worker's OSError object, only its traceback text (measured with
    Ray 2.60), so that text is read too: `OSError: [Errno 28] ...: 'path'`."""
    for current in error_chain(err):
        if isinstance(current, OSError) and current.errno in _REASONS:
            return current
        text = f"{current}\n{getattr(current, 'traceback_str', '')}"
        for match in _ERRNO_TEXT.finditer(text):
            if int(match["errno"]) in _REASONS:
                return OSError(int(match["errno"]), match["reason"], match["path"])
    return None


def _existing_parent(path: Path) -> Path | None:
    """`path` if it is a folder, else its nearest existing parent folder."""
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return None
