"""A model's files in the results bucket, once per cluster: what every node loads from.

On a cluster of several nodes a folder on the driver's disk (a checkpoint, a snapshot in
its Hugging Face cache, a tokenizer copy) does not exist on the worker nodes, where Ray
Data places the engine and its CPU stages. So each folder a stage or an engine loads is
copied once to `RESULTS/.models/<key>/`, and handed to Ray as that `s3://` URI: Ray 2.60's
`model_source` downloads a remote source on each node into that node's Hugging Face cache
(`download_model_files` in ray/llm/_internal/common/utils/download_utils.py, boto3 for
s3://; Ray writes the folder's optional `hash` file into the snapshot's refs/main).

A mirror is complete when its manifest (`geosee-mirror.json`, written last) is there and
every file it lists is there with its size; a manifest whose files are not (a file removed
or resized in the bucket) is removed and the mirror copied again. A copy cut short
(SlowDown past the retry budget, a killed run) is resumed by the next run: the files
already there with the right size are kept when the copy was of the same files (`PENDING`),
so a failed upload of weights does not start again from the first file. The manifest holds
each file's SHA-256: a mirror whose manifest differs from the source's files (another
commit, an edited file) is refused, never overwritten, so two runs never load different
bytes under one name.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pyarrow.fs as pafs

from store.errors import UsageError
from store.retries import boto_retry_env
from store.storage import RemotePath

MIRRORS = ".models"  # under the results root
MANIFEST = "geosee-mirror.json"
# Written before the first file, removed after the manifest: a copy cut short and resumed
# keeps the files it finds with their size only when this is the manifest it means to write.
PENDING = "geosee-mirror.pending.json"
RAY_HASH_FILE = "hash"  # Ray names the node's snapshot folder after its content
CHUNK = 8 << 20
log = logging.getLogger(__name__)


class MirrorError(UsageError):
    """A mirror in the bucket that is incomplete or holds other files than the source."""


@dataclass(frozen=True)
class MirroredFile:
    """One file of a mirror: its path inside the folder, size and SHA-256."""

    name: str
    size: int
    sha256: str


def sha256_of(path: Path) -> str:
    """The file's SHA-256, read in chunks (weights files run to gigabytes)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def folder_files(folder: Path) -> dict[str, Path]:
    """Every regular file under `folder` by its relative POSIX path (hidden ones left out:
    a `.cache` of huggingface_hub's downloads, an editor's swap file)."""
    return {
        p.relative_to(folder).as_posix(): p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    }


def manifest_of(files: dict[str, Path]) -> list[MirroredFile]:
    """Name, size and SHA-256 of each file."""
    return [MirroredFile(name, p.stat().st_size, sha256_of(p)) for name, p in files.items()]


def manifest_digest(manifest: Iterable[MirroredFile]) -> str:
    """One digest of the whole manifest (the content Ray's `hash` file names)."""
    digest = hashlib.sha256()
    for f in sorted(manifest, key=lambda f: f.name):
        digest.update(f"{f.name}\0{f.size}\0{f.sha256}\n".encode())
    return digest.hexdigest()


def ray_uri(path: RemotePath) -> str:
    """The URI Ray's downloader takes: `s3://bucket/key`, without the query pyarrow reads
    (Ray's boto3 client finds the endpoint itself: AWS, or AWS_ENDPOINT_URL_S3)."""
    return f"{path.scheme}://{path.netloc}/" + "/".join(path.segments)


def endpoint_env(path: RemotePath) -> dict[str, str]:
    """What Ray's boto3 downloader needs to reach the store of `path` (an s3:// one; nothing
    for others): the retry budget of store.retries as AWS_RETRY_MODE/AWS_MAX_ATTEMPTS, and,
    for an S3-compatible server named in the URI (`endpoint_override`, `scheme`), the same
    address as AWS_ENDPOINT_URL_S3 (boto3 reads them; it reads no URI query)."""
    query = dict(parse_qsl(path.query))
    endpoint = query.get("endpoint_override")
    if path.scheme != "s3":
        return {}
    env = boto_retry_env()  # Ray's boto3 gives up after 5 tries (legacy mode) otherwise
    if endpoint:
        if "://" not in endpoint:
            endpoint = f"{query.get('scheme', 'https')}://{endpoint}"
        env["AWS_ENDPOINT_URL_S3"] = endpoint
    return env


def read_manifest(dest: RemotePath) -> list[MirroredFile] | None:
    """The mirror's manifest; None when it has none (never written, or a copy cut short)."""
    target = dest / MANIFEST
    if not target.is_file():
        return None
    try:
        data = json.loads(target.read_bytes())
        return [MirroredFile(f["name"], int(f["size"]), f["sha256"]) for f in data["files"]]
    except (ValueError, KeyError, TypeError) as err:
        raise MirrorError(f"model mirror {dest}: its {MANIFEST} is unreadable ({err})") from err


def check_complete(dest: RemotePath, manifest: list[MirroredFile]) -> None:
    """MirrorError naming the first file of the manifest that is missing or of another
    size in the bucket."""
    sizes = _sizes(dest)
    for f in manifest:
        if f.name not in sizes:
            raise MirrorError(
                f"model mirror {dest} is incomplete: {f.name} is missing (remove the folder "
                "and run again to copy it anew)"
            )
        if sizes[f.name] != f.size:
            raise MirrorError(
                f"model mirror {dest} is incomplete: {f.name} has {sizes[f.name]} bytes, its "
                f"manifest says {f.size} (remove the folder and run again)"
            )


def complete_manifest(dest: RemotePath) -> list[MirroredFile] | None:
    """The manifest of a complete mirror at `dest` (read from the store alone), else None.
    A manifest whose files are not all there with their sizes is removed, so the mirror is
    copied again."""
    found = read_manifest(dest)
    if found is None:
        return None
    try:
        check_complete(dest, found)
    except MirrorError as err:
        log.warning("%s; copying it again", str(err).split(" (", 1)[0])
        (dest / MANIFEST).unlink(missing_ok=True)
        (dest / RAY_HASH_FILE).unlink(missing_ok=True)
        return None
    return found


def _sizes(dest: RemotePath) -> dict[str, int]:
    """Each file under `dest` (its path below it) and its size, from one listing."""
    selector = pafs.FileSelector(dest.fs_path, recursive=True, allow_not_found=True)
    prefix = dest.fs_path.rstrip("/") + "/"
    return {
        info.path.removeprefix(prefix): info.size
        for info in dest.filesystem.get_file_info(selector)
        if info.type == pafs.FileType.File
    }


def _upload(source: Path, target: RemotePath) -> None:
    with source.open("rb") as stream, target.filesystem.open_output_stream(target.fs_path) as sink:
        while chunk := stream.read(CHUNK):
            sink.write(chunk)


def mirror_folder(
    files: dict[str, Path],
    dest: RemotePath,
    what: str,
    manifest: list[MirroredFile] | None = None,
) -> tuple[str, int]:
    """`files` (relative name -> local file) copied to `dest` unless a complete mirror of
    the same files is there already; (the URI Ray loads it from, bytes copied now).
    `manifest`: theirs, if computed already (hashing weights takes a while). MirrorError
    when `dest` holds a mirror of other files; an incomplete one is copied again."""
    manifest = manifest if manifest is not None else manifest_of(files)
    found = read_manifest(dest)
    if found is not None:
        if sorted(found, key=lambda f: f.name) != sorted(manifest, key=lambda f: f.name):
            differ = sorted(
                {f.name for f in manifest}.symmetric_difference(f.name for f in found)
                or {f.name for f in manifest if f not in found}
            )
            raise MirrorError(
                f"model mirror {dest} of {what} holds other files than {what} has "
                f"(checksum or list differs: {', '.join(differ[:3])}); remove the folder "
                "or give the model another revision"
            )
        if complete_manifest(dest) is not None:
            return ray_uri(dest), 0
    body: dict[str, Any] = {"of": what, "files": [f.__dict__ for f in manifest]}
    text = json.dumps(body, indent=1).encode()
    done = _already_copied(dest, text, manifest)
    copied = 0
    log.info("%s: copying %d file(s) to %s (%d there already)", what, len(files) - len(done),
             dest, len(done))  # fmt: skip
    (dest / PENDING).write_bytes(text)  # before any file: what a resumed copy may keep
    for name, path in files.items():
        if name not in done:
            _upload(path, dest / name)
            copied += path.stat().st_size
    (dest / RAY_HASH_FILE).write_bytes(manifest_digest(manifest)[:40].encode())
    # Last: its presence means every file above is complete.
    (dest / MANIFEST).write_bytes(text)
    (dest / PENDING).unlink(missing_ok=True)
    return ray_uri(dest), copied


def _already_copied(dest: RemotePath, text: bytes, manifest: list[MirroredFile]) -> set[str]:
    """The files a copy cut short left in `dest` that need no upload again: those with the
    manifest's size, when that copy was of the same files (its pending manifest is ours, so
    the checksums match too). A copy of other files, or of unknown ones, keeps nothing."""
    pending = dest / PENDING
    if not pending.is_file() or pending.read_bytes() != text:
        return set()
    sizes = _sizes(dest)
    return {f.name for f in manifest if sizes.get(f.name) == f.size}


def fetch_mirror(uri: str, cache: Path) -> Path:
    """The mirror at `uri` (a results-store URI, its query included) as a folder on this
    node, under `cache`: made once per node (renamed into place whole), each file checked
    against the manifest's SHA-256. For engines that load a local folder only (the hf
    engine); Ray's vLLM stages download their sources themselves."""
    import os
    import shutil

    from store.storage import location

    source = location(uri)
    if not isinstance(source, RemotePath):
        return Path(uri)
    manifest = read_manifest(source)
    if manifest is None:
        raise MirrorError(f"model mirror {source} has no {MANIFEST}: it is incomplete")
    target = cache / manifest_digest(manifest)[:32]
    if target.is_dir():
        return target
    staging = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    for f in manifest:
        local = staging / f.name
        local.parent.mkdir(parents=True, exist_ok=True)
        with source.filesystem.open_input_stream((source / f.name).fs_path) as stream, \
                local.open("wb") as sink:  # fmt: skip
            while chunk := stream.read(CHUNK):
                sink.write(chunk)
        if sha256_of(local) != f.sha256:
            shutil.rmtree(staging, ignore_errors=True)
            raise MirrorError(
                f"model mirror {source}: {f.name} does not match its manifest's checksum"
            )
    try:
        staging.rename(target)
    except OSError:  # another actor on this node made it first: the same files
        shutil.rmtree(staging, ignore_errors=True)
    return target
