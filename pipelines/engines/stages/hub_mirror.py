"""A hub model's mirror in the results store, copied through the head one file at a time.

`RESULTS/.models/<repo>@<commit>/` (store.model_mirror) is named by the commit, so a pinned
model's complete mirror is recognised from the store alone, without asking the hub: the
sweep's GeoBuild run after the model's evaluate, a resumed sweep and a second config of the
same repo reuse it (this node's lock of the key makes the second wait for the first). A
missing or incomplete one is copied from the hub file by file (store.mirror_stream): the
config and tokenizer files first (kept: the tokenize stage's copy is made from them), then
each weights file fetched into the staging folder under HF_HUB_CACHE, uploaded and deleted
before the next, under one lock for every mirror on the node. So the head never holds more
than one weights file of all the models the sweep runs at once (the dry run prints that
bound: pipelines/sweep/weights.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from pipelines.engines.models.checkpoint_files import TOKENIZER_FILES
from pipelines.engines.models.hub_model import (
    HubId,
    fetch_file,
    is_commit,
    listed_files,
    resolve_commit,
    weight_patterns,
)
from pipelines.engines.models.model_revisions import hub_revision
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.plain_tokenizer import regex_fixed_copy
from store.mirror_stream import (
    HEAD_LOCK,
    RemoteFile,
    check_first,
    locked,
    staging,
    stream_mirror,
)
from store.model_mirror import (
    CHUNK,
    MirroredFile,
    complete_manifest,
    folder_files,
    ray_uri,
)
from store.storage import RemotePath


@dataclass(frozen=True)
class HubMirror:
    """A complete mirror: its URI for Ray, the bytes copied now, where it is, and a local
    folder of its tokenizer files (valid inside `hub_mirror`'s block only)."""

    engine: str
    copied: int
    mirror: RemotePath
    tokenizer: Path


def mirror_commit(cfg: ModelConfig) -> str:
    """The commit a hub model's mirror is of: its pinned revision, without asking the hub;
    a branch or tag is resolved (one metadata request)."""
    revision = hub_revision(cfg.revision)
    if revision and is_commit(revision):
        return revision
    return resolve_commit(HubId(cfg.repo, revision)).commit


def hub_key(cfg: ModelConfig, commit: str) -> str:
    """`<org>/<name>@<commit>` (`+fix-mistral-regex`: its tokenizer config asks for the fix)."""
    return f"{cfg.repo}@{commit}" + ("+fix-mistral-regex" if cfg.fix_mistral_regex else "")


@contextlib.contextmanager
def hub_mirror(cfg: ModelConfig, root: RemotePath) -> Iterator[HubMirror]:
    """The complete mirror of hub model `cfg` under `root` (copied now if it is not), with
    its tokenizer files in a staging folder of this node that is removed after the block."""
    from huggingface_hub.constants import HF_HUB_CACHE

    commit = mirror_commit(cfg)
    key = hub_key(cfg, commit)
    dest = root / key
    with staging(Path(HF_HUB_CACHE), key) as folder:
        manifest = complete_manifest(dest)
        if manifest is not None:
            tokenizer = _tokenizer_from(dest, manifest, folder / "tokenizer")
            yield HubMirror(ray_uri(dest), 0, dest, tokenizer)
            return
        copied, tokenizer = _copy(cfg, HubId(cfg.repo, commit), commit, dest, folder)
        yield HubMirror(ray_uri(dest), copied, dest, tokenizer)


def _copy(
    cfg: ModelConfig, hub_id: HubId, commit: str, dest: RemotePath, folder: Path
) -> tuple[int, Path]:
    """Copy the commit's files to `dest` one weights file at a time; (bytes copied, the
    folder of its tokenizer files)."""
    listed = listed_files(hub_id, commit)
    weights = set(weight_patterns(tuple(listed)))
    large = [RemoteFile(n, s) for n, s in listed.items() if any(fnmatch(n, p) for p in weights)]
    kept = [RemoteFile(n, s) for n, s in listed.items() if RemoteFile(n, s) not in large]
    check_first(folder, kept, large, cfg.name)
    files = folder / "files"
    with locked(folder.parent / HEAD_LOCK):
        for f in kept:
            fetch_file(hub_id, commit, f.name, files)
    local = folder_files(files)
    tokenizer = files
    if cfg.fix_mistral_regex:  # the engine decodes with what the stages encode
        tokenizer = regex_fixed_copy(files)
        local.update(folder_files(tokenizer))
    _, copied = stream_mirror(
        dest,
        cfg.name,
        f"{cfg.repo}@{commit}",
        large,
        lambda name, into: fetch_file(hub_id, commit, name, into / "weights"),
        folder,
        local,
    )
    return copied, tokenizer


def _tokenizer_from(dest: RemotePath, manifest: list[MirroredFile], into: Path) -> Path:
    """The mirror's tokenizer files (the top-level config and tokenizer files, small) read
    from the store into `into`: what the tokenize stage's copy is made from."""
    into.mkdir(parents=True)
    for f in manifest:
        if "/" in f.name or not any(fnmatch(f.name, p) for p in TOKENIZER_FILES):
            continue
        with dest.filesystem.open_input_stream((dest / f.name).fs_path) as stream, \
                (into / f.name).open("wb") as sink:  # fmt: skip
            while chunk := stream.read(CHUNK):
                sink.write(chunk)
    return into
