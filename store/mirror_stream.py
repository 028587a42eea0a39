"""A model mirror copied through this node's disk one file at a time.

The sweep runs many models at once, each in its own process on the head, and each mirrors
its model from the hub to the results store (store.model_mirror) before its engines start.
Fetched whole, about 26 models (about 758 GB by the configs' sizes) would land on the head's
root volume together. So a hub model's files are fetched, hashed, uploaded and deleted one
at a time, and every mirror on the node takes one lock for that (`HEAD_LOCK`): the head
holds at most one model file at once whatever the number of models, plus the small
config and tokenizer files of the mirrors in progress. Before the first byte the copy checks
that the disk it downloads to has room for its small files and its largest file, and says
in one line how many bytes it needs and where, if not.

Each mirror also takes a lock of its own key, so two runs of one model on this node
(evaluate, then its GeoBuild run; two configs of one repo) copy it once: the second finds
the first's complete mirror. A copy cut short leaves its staging folder behind; the next
mirror on this node removes every staging folder whose lock nobody holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.model_mirror import (
    MANIFEST,
    PENDING,
    RAY_HASH_FILE,
    MirroredFile,
    MirrorError,
    _sizes,
    _upload,
    manifest_digest,
    sha256_of,
)
from store.storage import RemotePath

STAGING = "geosee-mirror-downloads"  # under the folder the node downloads to
HEAD_LOCK = "one-file-at-a-time.lock"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteFile:
    """A file of the source (the hub) to copy: its path in the repo and its size."""

    name: str
    size: int


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` for the processes of this node (flock; released when the
    process ends, however it ends)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unlocked(lock: Path) -> bool:
    """Whether nobody holds `lock` (then this process could take it)."""
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


@contextlib.contextmanager
def staging(download_dir: Path, key: str) -> Iterator[Path]:
    """An empty staging folder for mirroring `key`, this node's lock of that key held
    meanwhile; the folder is removed afterwards, and the leftovers of copies cut short
    (staging folders whose lock nobody holds) before."""
    root = download_dir / STAGING
    root.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    with locked(root / f"{name}.lock"):
        for folder in [p for p in root.iterdir() if p.is_dir()]:
            if folder.name == name or _unlocked(root / f"{folder.name}.lock"):
                log.info("removing %s, left by a mirror copy cut short", folder)
                shutil.rmtree(folder, ignore_errors=True)
        folder = root / name
        folder.mkdir()
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def check_room(
    folder: Path,
    need: int,
    what: str,
    why: str,
    task: str = "model mirror of",
    setting: str = "HF_HUB_CACHE",
) -> None:
    """MirrorError in one line when `folder`'s disk has fewer than `need` free bytes (`task`
    names what needs them, `setting` the variable that moves the folder: a conversion's
    refusal says it in the mirrors' words, pipelines.engines.models.llava_hub)."""
    free = shutil.disk_usage(folder).free
    if free < need:
        raise MirrorError(
            f"{task} {what}: needs {need} bytes free at {folder} ({why}), which has "
            f"{free}; free that much there, or point {setting} at a larger disk"
        )


def check_first(folder: Path, kept: list[RemoteFile], large: list[RemoteFile], what: str) -> None:
    """Before the first byte: MirrorError in one line unless `folder`'s disk has room for
    the `kept` files (held until the copy ends) and the largest of the `large` ones (held
    one at a time), counted while no other mirror of this node holds a file."""
    largest = max(large, key=lambda f: f.size, default=RemoteFile("", 0))
    small = sum(f.size for f in kept)
    why = f"{len(kept)} config and tokenizer file(s) of {small} bytes and its largest file"
    with locked(folder.parent / HEAD_LOCK):
        check_room(folder, small + largest.size, what, f"{why}, {largest.name}")


def stream_mirror(
    dest: RemotePath,
    what: str,
    source: str,
    files: list[RemoteFile],
    fetch: Callable[[str, Path], Path],
    folder: Path,
    local: dict[str, Path] | None = None,
) -> tuple[list[MirroredFile], int]:
    """`local` files (already on this node) and then `files` copied to `dest`, each of the
    latter fetched by `fetch(name, folder)` under this node's one-file lock, hashed, uploaded
    and deleted; the manifest written last. `source` names what is copied (`repo@commit`):
    a copy cut short of the same source is resumed, keeping the files it uploaded with
    their sizes. Returns the manifest and the bytes uploaded now."""
    local = local or {}
    head_lock = folder.parent / HEAD_LOCK
    done = _resumable(dest, source, {f.name: f.size for f in files})
    manifest = [MirroredFile(n, p.stat().st_size, sha256_of(p)) for n, p in local.items()]
    copied = 0
    log.info("%s: copying %d file(s) to %s one at a time (%d there already)",
             what, len(local) + len(files) - len(done), dest, len(done))  # fmt: skip
    _write_pending(dest, what, source, list(done.values()))
    for name, path in local.items():
        _upload(path, dest / name)
        copied += path.stat().st_size
    for remote in files:
        if remote.name in done:
            manifest.append(done[remote.name])
            continue
        with locked(head_lock):
            check_room(folder, remote.size, what, remote.name)
            path = fetch(remote.name, folder)
            try:
                entry = MirroredFile(remote.name, path.stat().st_size, sha256_of(path))
                _upload(path, dest / remote.name)
            finally:
                path.unlink(missing_ok=True)
        copied += entry.size
        done[remote.name] = entry
        manifest.append(entry)
        _write_pending(dest, what, source, list(done.values()))
    (dest / RAY_HASH_FILE).write_bytes(manifest_digest(manifest)[:40].encode())
    body: dict[str, Any] = {"of": what, "source": source, "files": [f.__dict__ for f in manifest]}
    (dest / MANIFEST).write_bytes(json.dumps(body, indent=1).encode())  # last: complete
    (dest / PENDING).unlink(missing_ok=True)
    return manifest, copied


def _write_pending(dest: RemotePath, what: str, source: str, done: list[MirroredFile]) -> None:
    body = {"of": what, "source": source, "uploaded": [f.__dict__ for f in done]}
    (dest / PENDING).write_bytes(json.dumps(body, indent=1).encode())


def _resumable(dest: RemotePath, source: str, sizes: dict[str, int]) -> dict[str, MirroredFile]:
    """The files a copy of the same `source` cut short uploaded, that are in the store with
    their size (and that this copy still wants): kept, with the digest it recorded."""
    pending = dest / PENDING
    if not pending.is_file():
        return {}
    try:
        body = json.loads(pending.read_bytes())
        if body.get("source") != source:
            return {}
        entries = [MirroredFile(f["name"], int(f["size"]), f["sha256"]) for f in body["uploaded"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}  # another copy's pending file (store.model_mirror's), or a broken one
    there = _sizes(dest)
    return {f.name: f for f in entries if there.get(f.name) == f.size == sizes.get(f.name)}
