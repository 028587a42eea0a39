"""The error bad user input raises, from the ground floor up (re-exported by pipelines.cli)."""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from pathlib import Path

# A write refused for want of room: no space, over quota, past the largest file size.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# How `no_room` says the bytes a write needed, in the error's own text: a Ray worker's
# OSError reaches the driver as traceback text only (pipelines.command_line.disk_failure
# reads it back).
_NEEDED = re.compile(r"; needs (?P<bytes>\d+) bytes")


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2, nothing written."""


def error_chain(err: BaseException) -> Iterator[BaseException]:
    """`err` and every exception it was raised from or during, each once. Ray's task errors
    keep the worker's exception in `cause`; Python's are in `__cause__` and `__context__`."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [err]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__, getattr(current, "cause", None)]


def no_room(err: OSError, path: Path, size: int) -> OSError | None:
    """`err`, when the disk had no room to write `size` bytes to `path`, as an OSError that
    names the file and says the bytes it needed; None for any other error. `size` is the
    file's data: the file system wants it rounded up to whole blocks, plus an entry in the
    folder."""
    if err.errno not in NO_ROOM or _NEEDED.search(str(err)):
        return None
    return OSError(err.errno, f"{err.strerror}; needs {size} bytes", str(path))


def bytes_needed(text: str) -> int | None:
    """The bytes a write needed, as `no_room` put them in an error's text; None if absent."""
    found = _NEEDED.search(text)
    return int(found["bytes"]) if found else None
