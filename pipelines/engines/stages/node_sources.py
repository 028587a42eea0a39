"""What Ray's vLLM stages and engine load, on a cluster of several nodes: remote sources.

Ray Data places the CPU stages (chat template, tokenize, prepare-multimodal) with its
SPREAD strategy (ray/data/context.py) and the engine wherever its GPUs are: on a cluster
they start on worker nodes, which do not have the driver's disk. Ray 2.60 passes a local
`model_source` through unchanged (`download_model_files`), so a folder of the driver's
(a checkpoint, a snapshot or a tokenizer copy in its Hugging Face cache) would be looked
for on a node that does not have it. So on a cluster of several nodes (or one whose
autoscaler can add nodes) every folder a stage or the engine loads is mirrored to the
results bucket (store.model_mirror) and handed over as its `s3://` URI, which Ray
downloads on each node. A single node keeps its local paths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pipelines.engines.models.llava_original import CONVERTED_SUFFIX, LAYOUT
from pipelines.engines.models.model_revisions import hub_revision
from pipelines.engines.models.model_schema import ModelConfig
from store.errors import UsageError
from store.model_mirror import (
    MIRRORS,
    MirroredFile,
    endpoint_env,
    folder_files,
    manifest_digest,
    manifest_of,
    mirror_folder,
)
from store.storage import Location, RemotePath


class SharedResultsError(UsageError):
    """A cluster of several nodes with results on one node's disk."""


@dataclass(frozen=True)
class NodeSources:
    """The sources handed to Ray's processor: the engine's (weights and tokenizer, also the
    prepare-multimodal stage's), the chat-template stage's, the tokenize stage's."""

    engine: str
    chat: str
    tokenize: str
    copied_bytes: int = 0  # mirrored by this call (0: the mirrors were complete already)
    mirror: str = ""  # the engine's mirror as a results-store URI (hf: store.fetch_mirror)
    env: tuple[tuple[str, str], ...] = ()  # what the stages' downloader needs to reach them


def several_nodes() -> bool:
    """Whether the connected Ray cluster has more than one live node, or an autoscaler
    that can add some (its workers will not see this node's disk either)."""
    import ray

    from pipelines.sweep.capacity import BOOTSTRAP_CONFIG, from_gcs

    if sum(1 for node in ray.nodes() if node.get("Alive")) > 1:
        return True
    # An autoscaler's config: published (autoscaler v2), or left on the head by `ray up`.
    return from_gcs() is not None or BOOTSTRAP_CONFIG.is_file()


def check_shared_results(out: Location, command: str) -> None:
    """SharedResultsError when `out` is a local folder and the cluster has several nodes:
    each node would write its shards onto its own disk."""
    if isinstance(out, RemotePath) or not several_nodes():
        return
    raise SharedResultsError(
        f"{command}: this Ray cluster has several nodes (or can add them), and --out {out} "
        "is a folder on this node's disk, which the other nodes cannot write to or read "
        "from; give a bucket every node reaches (--out s3://BUCKET/PATH)"
    )


def mirror_key(cfg: ModelConfig, manifest: list[MirroredFile]) -> str:
    """`<org>/<name>@<commit>` for a hub model at a commit (`+llava-hf` once converted from the
    original LLaVA layout), else `local/<name>@<digest>`."""
    revision = hub_revision(cfg.revision)
    converted = cfg.layout == LAYOUT  # a hub checkpoint converted here (llava_convert)
    if revision and (converted or not Path(cfg.source).is_dir()):
        key = f"{cfg.repo}@{revision}" + (CONVERTED_SUFFIX if converted else "")
    else:
        key = f"local/{cfg.name}@{manifest_digest(manifest)[:16]}"
    return key + ("+fix-mistral-regex" if cfg.fix_mistral_regex else "")


def node_sources(cfg: ModelConfig, out: Location, command: str = "evaluate") -> NodeSources | None:
    """The remote sources of `cfg`'s stages and engine, mirrored under `out` (None on a
    single node: the local paths serve). A hub model is mirrored from the hub one file at a
    time (hub_mirror), a folder from this node's disk. SharedResultsError for local results
    on several nodes; store.model_mirror.MirrorError for a mirror of other files, or a
    download folder without room for the copy (an incomplete mirror is copied again)."""
    from pipelines.engines.prompts.plain_tokenizer import regex_fixed_copy
    from pipelines.engines.stages.hub_mirror import hub_mirror

    if not several_nodes():
        return None
    check_shared_results(out, command)
    assert isinstance(out, RemotePath)  # a local `out` on several nodes was refused above
    env = endpoint_env(out)
    # This process too: Ray's processor reads the engine source's config here (telemetry).
    for name, value in env.items():
        os.environ.setdefault(name, value)
    root = out / MIRRORS
    if not Path(cfg.source).is_dir():  # a hub model: streamed file by file (hub_mirror)
        with hub_mirror(cfg, root) as hub:
            tokenize, more = _tokenize_source(cfg, hub.tokenizer, root, hub.engine)
        return NodeSources(hub.engine, hub.engine, tokenize, hub.copied + more,
                           str(hub.mirror), tuple(sorted(env.items())))  # fmt: skip
    folder = Path(cfg.source)
    files = folder_files(folder)
    tokenizer = folder
    if cfg.fix_mistral_regex:  # the engine decodes with what the stages encode
        tokenizer = regex_fixed_copy(folder)
        files.update(folder_files(tokenizer))
    manifest = manifest_of(files)
    mirror = root / mirror_key(cfg, manifest)
    engine, copied = mirror_folder(files, mirror, cfg.name, manifest)
    tokenize, more = _tokenize_source(cfg, tokenizer, root, engine)
    return NodeSources(engine, engine, tokenize, copied + more, str(mirror),
                       tuple(sorted(env.items())))  # fmt: skip


def _tokenize_source(
    cfg: ModelConfig, tokenizer: Path, root: RemotePath, engine: str
) -> tuple[str, int]:
    """The tokenize stage's source: the engine's mirror, or, when its tokenizer adds special
    tokens to every text, a mirrored copy that adds none; (its URI, bytes copied now)."""
    from pipelines.engines.prompts.plain_tokenizer import plain_tokenizer

    plain = plain_tokenizer(tokenizer, cfg.trust_remote_code)
    if plain is None:
        return engine, 0
    what = f"{cfg.name}'s tokenizer without added special tokens"
    return mirror_folder(folder_files(plain), root / "tokenizers" / plain.name, what)
