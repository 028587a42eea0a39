"""An original-layout LLaVA checkpoint fetched from the hub for its conversion to llava-hf
(llava_convert), within the node's disk: one conversion at a time, only where there is room
for the original and its converted copy together, and the original deleted once converted.

Why: the sweep runs every model's task on the head at once, and four of its models (G-LLaVA
7B/13B, Math-LLaVA-13B, MultiMath-7B) are published in LLaVA's own layout, which is fetched
whole into the head's HF_HUB_CACHE and converted there. Fetched together and kept, their
originals and converted copies took 160 GB beside the mirrors' one file at a time
(store.mirror_stream). So:

- a conversion holds this node's conversion lock (store.mirror_stream's `locked`, on a lock
  file of its own: a mirror does not wait for a conversion of minutes) from before its
  fetch until its original is deleted: the node holds one original at a time;
- before the first byte it checks that the folders it fetches to (HF_HUB_CACHE) and
  converts into (llava_convert.cache_root) have room for the original's files not in the
  cache yet (the hub's listing gives their sizes) and for the converted copy (the same
  tensors renamed, in the same dtype: counted as the original's weights files), else it
  stops the model with one line naming the bytes and the folder (store.mirror_stream's
  MirrorError, a usage error: exit 2);
- once the converted copy is complete (or the conversion failed), the original is deleted:
  everything after (the pre-flight check, the canary, a cluster's mirror
  `<repo>@<commit>+llava-hf`, the engines) reads the converted copy only, and the next run
  finds that copy by what its config asks for (llava_convert.hub_conversion_key), without
  the original. Deleted is only what this conversion fetched into the Hugging Face cache:
  the files and blobs of the snapshot that were there before it (a user's own download)
  stay, and a local folder given as the model is converted where it is, never fetched
  and never deleted (llava_convert.prepare).

The converted copy stays in llava_convert's cache: the model's GeoBuild run and a resumed
sweep load it, and a cluster's mirror (store.model_mirror.mirror_folder) copies it and
leaves it. So the head holds every converted copy plus one original at most
(pipelines/sweep/weights.py prints that bound). Not counted in the room check: the vision
tower a checkpoint names, fetched by the conversion's plan into the Hugging Face cache and
kept (one CLIP tower, about 1.7 GB, shared by all four), and the tower's vision half that
the converted copy carries (about 1.2 GB in float32 for CLIP-L/336), which the embedded
tower copy some originals carry and the conversion drops partly offsets.

A conversion killed before its cleanup leaves its note (what the cache held before it
fetched); the next conversion on the node, holding the lock, deletes what that one fetched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from fnmatch import fnmatch
from pathlib import Path

from pipelines.engines.models.hub_model import (
    HubCommit,
    HubError,
    HubId,
    download,
    listed_files,
    weight_patterns,
)
from pipelines.engines.models.llava_original import CACHE_ENV, RECORD, LayoutError
from store.mirror_stream import check_room, locked

CONVERSION_LOCK = "geosee-one-conversion-at-a-time.lock"  # in HF_HUB_CACHE
NOTES = "geosee-conversion-downloads"  # in HF_HUB_CACHE: what a conversion in progress fetches
TASK = "conversion to llava-hf of"
log = logging.getLogger(__name__)


def hub_conversion(
    hub_id: HubId, commit: HubCommit, what: str, dest: Path, make: Callable[[Path], Path]
) -> Path:
    """`dest`, the llava-hf conversion of `hub_id` at `commit` (`what`: the model, for
    messages): the cached one, else made now by `make(snapshot folder)` under this node's
    conversion lock, with room checked before the fetch and the fetched original deleted
    after."""
    from huggingface_hub import constants

    if (dest / RECORD).is_file():
        return dest
    downloads = Path(constants.HF_HUB_CACHE)
    downloads.mkdir(parents=True, exist_ok=True)
    with locked(downloads / CONVERSION_LOCK):
        for leftover in sorted((downloads / NOTES).glob("*.json")):
            log.info("deleting what a conversion cut short fetched (%s)", leftover)
            _delete_fetched(downloads, leftover)
        if (dest / RECORD).is_file():  # converted by another process while this one waited
            return dest
        try:
            listed = listed_files(hub_id, commit.commit)
        except HubError as err:
            raise LayoutError(f"model {what}: {err}") from err
        snapshot = _repo_cache(downloads, commit.repo) / "snapshots" / commit.commit
        missing = sum(size for name, size in listed.items() if not (snapshot / name).is_file())
        weights = weight_patterns(tuple(listed))
        converted = sum(s for n, s in listed.items() if any(fnmatch(n, p) for p in weights))
        check_conversion_room(downloads, dest.parent, missing, converted, what)
        with _fetched(downloads, commit):
            try:
                folder = download(hub_id, commit)
            except HubError as err:
                raise LayoutError(f"model {what}: {err}") from err
            return make(folder)


def check_conversion_room(
    downloads: Path, converted_root: Path, original: int, converted: int, what: str
) -> None:
    """MirrorError in one line unless `downloads` has room for `original` bytes and
    `converted_root` for `converted` (together, when they share a disk)."""
    converted_root.mkdir(parents=True, exist_ok=True)
    if os.stat(downloads).st_dev == os.stat(converted_root).st_dev:
        why = (
            f"its original checkpoint, {original} bytes not in the cache yet, and its "
            f"converted copy in {converted_root}, {converted} bytes"
        )
        check_room(downloads, original + converted, what, why, TASK)
        return
    check_room(downloads, original, what, "its original checkpoint, not in the cache yet", TASK)
    why = "its converted copy, as large as the original's weights"
    check_room(converted_root, converted, what, why, TASK, CACHE_ENV)


def _repo_cache(downloads: Path, repo: str) -> Path:
    """The Hugging Face cache's folder of a model repo (`models--org--name`)."""
    from huggingface_hub.file_download import repo_folder_name

    return downloads / repo_folder_name(repo_id=repo, repo_type="model")


@contextlib.contextmanager
def _fetched(downloads: Path, commit: HubCommit) -> Iterator[None]:
    """A note of what the cache holds of `commit`'s repo before the block (written first,
    so that a conversion killed in the block is cleaned up by the next); after it,
    whatever the block fetched there is deleted, and the note with it."""
    repo = _repo_cache(downloads, commit.repo)
    snapshot = repo / "snapshots" / commit.commit
    note = downloads / NOTES / f"{hashlib.sha256(str(repo).encode()).hexdigest()[:16]}.json"
    note.parent.mkdir(exist_ok=True)
    body = {
        "repo": str(repo),
        "snapshot": str(snapshot),
        "files": sorted(_relative_files(snapshot)),
        "blobs": sorted(_relative_files(repo / "blobs")),
    }
    note.write_text(json.dumps(body, indent=1), encoding="utf-8")
    try:
        yield
    finally:
        _delete_fetched(downloads, note)


def _relative_files(folder: Path) -> set[str]:
    """Every file (or link) under `folder`, by its path relative to it."""
    if not folder.is_dir():
        return set()
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


def _delete_fetched(downloads: Path, note: Path) -> None:
    """What was fetched since `note` was written: the snapshot's new files, the blobs they
    point to and any other new blob (a download cut short leaves one), then the folders
    left empty; last the note. A note naming anything but a model repo's snapshot in
    `downloads` is left alone."""
    try:
        body = json.loads(note.read_text(encoding="utf-8"))
        repo, snapshot = Path(body["repo"]), Path(body["snapshot"])
        files, blobs = set(body["files"]), set(body["blobs"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("%s: not a conversion's note (%s); left as it is", note, err)
        return
    in_cache = repo.parent == downloads and repo.name.startswith("models--")
    if not in_cache or snapshot.parent != repo / "snapshots":
        log.warning("%s names %s, not a snapshot in %s; left as it is", note, snapshot, downloads)
        return
    deleted = 0
    for name in sorted(_relative_files(snapshot) - files):
        (snapshot / name).unlink(missing_ok=True)  # a link into blobs/, or the file itself
        deleted += 1
    for name in sorted(_relative_files(repo / "blobs") - blobs):
        (repo / "blobs" / name).unlink(missing_ok=True)
    for folder in sorted((p for p in repo.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):  # not empty: kept
            folder.rmdir()
    with contextlib.suppress(OSError):
        repo.rmdir()
    log.info("%s: deleted the %d file(s) fetched for its conversion", repo, deleted)
    note.unlink(missing_ok=True)
