"""One writer per results folder: `<model dir>/.lock`, and a token every shard write checks.

- A run takes the lock before it scans the folder for finished keys, and removes it when it
  ends (normally or by an exception). The file holds JSON {pid, host, token, started,
  command, pid_start}; a daemon thread touches it every HEARTBEAT_S seconds.
- A lock is stale when its holder is gone: on this host, its pid is not alive (or is a
  later process that reused the pid); on another host, its heartbeat is older than
  STALE_AFTER_S. A stale lock is taken over; a live one refuses the run (UsageError).
- A lock file that is not a holder record (garbage, `"pid": "abc"`: `unreadable`) names no
  process to check, so it is stale only when nothing has touched it for STALE_AFTER_S: a
  live run touches its lock every HEARTBEAT_S, whatever the file holds. Younger, it refuses
  the run with one line naming the path; older, it is taken over with a warning naming it.
  An empty file is a run killed between creating the lock and writing it (both happen
  under the flock that every reader takes first), so it is taken over. A directory (or
  anything else that cannot be opened) in the lock's place refuses the run, naming it.
- Late shards of a dead run: each shard writer carries its run's token and, just before
  its atomic rename, checks under a shared `flock` that the lock still holds that token
  (and, on the holder's host, that the holder is alive); otherwise it writes nothing. A new
  run replaces the token under an exclusive `flock`, so no old writer is mid-rename after
  the takeover, and it scans the finished keys only then: a shard of the dead run can no
  longer land beside the new run's rows for the same keys.
- On an object store (store.storage.RemotePath) there is no flock, so every step is a
  read and a write of the lock object: a taker reads the lock back after writing it and
  gives up if another run's token is there; a writer checks the token and then uploads, two
  requests, so a takeover between them can let one late shard land. Its rows answer request
  keys the new run also asks, and every reader keeps one row per key (store.shards):
  such a shard adds no row to any result, and loses none (docs/storage.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.errors import UsageError
from store.storage import Location, RemotePath

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
HEARTBEAT_S = 10.0
# A lock held on another host is stale after this long without a heartbeat: many missed
# beats, so a slow shared file system or a busy node does not lose a live run its lock.
STALE_AFTER_S = 300.0


def lock_path(folder: Location) -> Location:
    """Where `folder`'s lock lives: the `.lock` file in it."""
    return folder / LOCK_FILE


def _process_start(pid: int) -> str | None:
    """The start time of `pid` in clock ticks since boot (Linux), to tell a reused pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, after the parenthesised name


def _pid_alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return start is None or _process_start(pid) in (None, start)


def holder_alive(holder: dict[str, Any], mtime: float) -> bool:
    """Whether the run recorded in a lock file (a record `unreadable` accepts) may still be
    writing."""
    if holder.get("host") == socket.gethostname():
        return _pid_alive(int(holder["pid"]), holder.get("pid_start"))
    return time.time() - mtime < STALE_AFTER_S


def _read_bytes(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    return data


def _read_holder(fd: int) -> dict[str, Any] | None:
    return _parse_holder(_read_bytes(fd))


# The fields a holder record must have, with their types (`RunLock.record`).
_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "pid": (int,),
    "host": (str,),
    "token": (str,),
    "pid_start": (str, type(None)),
}


def unreadable(data: bytes) -> str | None:
    """Why a lock's bytes are not a holder record (`RunLock.record`); None when they are
    one, or empty."""
    if not data.strip():
        return None
    try:
        holder = json.loads(data)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(holder, dict):
        return f"JSON {type(holder).__name__}, not an object"
    for name, types in _RECORD_TYPES.items():
        value = holder.get(name)
        # bool is an int to isinstance; a pid of True is as foreign as "abc".
        if not isinstance(value, types) or isinstance(value, bool):
            return f"{name!r} is {_shown(value)}"
    if holder["pid"] <= 0:
        return f"'pid' is {holder['pid']}"
    return None


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _parse_holder(data: bytes) -> dict[str, Any] | None:
    """The holder record in a lock's bytes; None when empty (a holder killed while writing
    it) or not a holder record (`unreadable`)."""
    if not data.strip() or unreadable(data) is not None:
        return None
    holder: dict[str, Any] = json.loads(data)
    return holder


@contextlib.contextmanager
def _locked(path: Path, mode: int, create: bool) -> Iterator[int | None]:
    """An fd of `path` under `flock(mode)`, checked to still be the file at `path` (a
    release unlinks it; an fd of the unlinked file would lock nothing anyone else sees);
    None when there is no lock file and `create` is False."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        except FileNotFoundError:
            yield None
            return
        try:
            fcntl.flock(fd, mode)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield fd
                return
        finally:
            os.close(fd)  # closing drops the flock
        if not create:
            yield None
            return


def _read_object(path: RemotePath) -> tuple[dict[str, Any] | None, float]:
    """The holder an object-store lock names and when it was last written (None, 0 when
    there is none, or it is not a holder record)."""
    holder, mtime, _ = _read_object_raw(path)
    return (holder, mtime) if holder is not None else (None, 0.0)


def _read_object_raw(path: RemotePath) -> tuple[dict[str, Any] | None, float, bytes]:
    """`_read_object`, with the lock's bytes (b"" when there is none)."""
    try:
        data, mtime = path.read_bytes(), path.mtime() or 0.0
    except FileNotFoundError:
        return None, 0.0, b""
    return _parse_holder(data), mtime, data


def _describe(holder: dict[str, Any]) -> str:
    return (
        f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}"
        f" ({holder.get('command')})"
    )


@dataclass
class RunLock:
    """The lock of one results folder, as a context manager: taken on entry (UsageError if
    a live run holds it), heartbeat while held, removed on exit."""

    folder: Location
    command: str = ""

    def __post_init__(self) -> None:
        self.path = lock_path(self.folder)
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._created: list[Path] = []

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def record(self) -> dict[str, Any]:
        """What the lock file says: who holds it, since when, running what."""
        return {
            "pid": os.getpid(),
            "pid_start": _process_start(os.getpid()),
            "host": socket.gethostname(),
            "token": self.token,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": self.command or " ".join(sys.argv),
        }

    def acquire(self) -> None:
        """Take the lock (UsageError if a live run holds it) and start the heartbeat."""
        if isinstance(self.path, RemotePath):
            self._take_object(self.path)
        else:
            self._take_file()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="run-lock")
        self._beat.start()

    def _take_object(self, path: RemotePath) -> None:
        holder, mtime, data = _read_object_raw(path)
        self._refuse_or_take_over(holder, mtime, data)
        path.write_bytes(json.dumps(self.record()).encode())
        # Last writer wins on an object store: read back to learn whether we were last.
        holder, _ = _read_object(path)
        if holder is None or holder.get("token") != self.token:
            raise self._held(holder or {"command": "another run taking it at the same time"})

    def _refuse_or_take_over(
        self, holder: dict[str, Any] | None, mtime: float, data: bytes
    ) -> None:
        """UsageError when a live run holds the lock, or when an unreadable one may still be
        a live run's (module docstring); a warning naming what a takeover replaces."""
        why = unreadable(data)
        if why is not None:
            age = time.time() - mtime
            if age < STALE_AFTER_S:
                raise UsageError(
                    f"{self.path} is not a run lock this program can read ({why}) and was "
                    f"touched {age:.0f} s ago; a live run touches its lock every "
                    f"{HEARTBEAT_S:g} s, so it is taken over only after {STALE_AFTER_S:g} s "
                    f"untouched: if no run is writing {self.folder}, remove {self.path}"
                )
            log.warning(
                "taking over the unreadable lock %s (%s): untouched for %.0f s, more than "
                "the %g s after which no live run can hold it",
                self.path, why, age, STALE_AFTER_S,
            )  # fmt: skip
            return
        if holder is not None and holder_alive(holder, mtime):
            raise self._held(holder)
        if holder is not None:
            log.warning("taking over the stale lock of %s: %s", self.folder, _describe(holder))

    def _held(self, holder: dict[str, Any]) -> UsageError:
        return UsageError(
            f"{self.folder} is being written by another run ({_describe(holder)}); wait for it "
            f"to end, or use another --out (if that run is dead, remove {self.path})"
        )

    def _take_file(self) -> None:
        assert isinstance(self.folder, Path) and isinstance(self.path, Path)
        self._make_folder()
        try:
            with _locked(self.path, fcntl.LOCK_EX, create=True) as fd:
                assert fd is not None
                data = _read_bytes(fd)
                self._refuse_or_take_over(_parse_holder(data), os.fstat(fd).st_mtime, data)
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(self.record()).encode(), 0)
                os.fsync(fd)
        except OSError as err:  # a directory in its place, no permission, ...
            self._remove_created_folders()
            what = "a directory" if self.path.is_dir() else (err.strerror or type(err).__name__)
            raise UsageError(
                f"{self.path} cannot be used as the run lock ({what}); nothing of this "
                f"program makes it so: move it away, then run again"
            ) from None
        except BaseException:
            self._remove_created_folders()
            raise

    def release(self) -> None:
        """Stop the heartbeat; remove the lock if it is still ours (another run may have taken
        it over as stale) and, locally, the folders `acquire` created."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if isinstance(self.path, RemotePath):
            if (_read_object(self.path)[0] or {}).get("token") == self.token:
                self.path.unlink(missing_ok=True)
            return
        with _locked(self.path, fcntl.LOCK_EX, create=False) as fd:
            if fd is not None and (_read_holder(fd) or {}).get("token") == self.token:
                self.path.unlink()  # under the lock: no writer of ours is mid-rename
        self._remove_created_folders()

    def release_on_signal(self) -> None:
        """`release` for a command a signal ends (pipelines.terminal.interrupt.kept_on_exit),
        so no late writer adds a shard after its line counted them; locally only: a request
        to an object store that stopped answering could hold up the exit, and a lock whose
        holder is dead is taken over by the next run anyway."""
        if not isinstance(self.path, RemotePath):
            self.release()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                if isinstance(self.path, RemotePath):
                    holder, _ = _read_object(self.path)
                    if (holder or {}).get("token") != self.token:
                        return  # taken over: nothing of ours to keep fresh
                    self.path.write_bytes(json.dumps(holder).encode())  # a new mtime
                else:
                    os.utime(self.path)

    def _make_folder(self) -> None:
        """mkdir -p, remembering the folders made, so a refused run leaves none behind."""
        assert isinstance(self.folder, Path)
        missing = [p for p in [self.folder, *self.folder.parents] if not p.exists()]
        for folder in reversed(missing):
            with contextlib.suppress(FileExistsError):
                folder.mkdir()
                self._created.append(folder)

    def _remove_created_folders(self) -> None:
        for folder in reversed(self._created):
            with contextlib.suppress(OSError):  # not empty: the run wrote something
                folder.rmdir()
        self._created = []


@contextlib.contextmanager
def writing_allowed(folder: Location, token: str) -> Iterator[bool]:
    """Whether a writer of the run holding `token` may still write into `folder`; locally,
    while the block runs no other run can take the lock (a shared flock), so a rename done
    inside it lands before any takeover and the new run's scan sees it (on an object store,
    see the module docstring)."""
    path = lock_path(folder)
    if isinstance(path, RemotePath):
        yield may_write(folder, _read_object(path)[0], token)
        return
    with _locked(path, fcntl.LOCK_SH, create=False) as fd:
        yield may_write(folder, None if fd is None else _read_holder(fd) or {}, token)


def may_write(folder: Location, holder: dict[str, Any] | None, token: str) -> bool:
    """Whether the lock's `holder` (None: no lock) lets the run holding `token` write."""
    if holder is None:
        log.warning("%s has no lock (its run ended); a late shard is not written", folder)
        return False
    if holder.get("token") != token:
        log.warning("%s is locked by another run now; a late shard is not written", folder)
        return False
    if holder.get("host") == socket.gethostname() and not _pid_alive(
        int(holder["pid"]), holder.get("pid_start")
    ):
        log.warning("the run writing %s is dead; a late shard is not written", folder)
        return False
    return True
