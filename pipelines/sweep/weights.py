"""What the sweep's GPU models move, from where to where, and whether the nodes' caches hold it.

The path of a model's weights (docs/cluster.md, "Weights";
pipelines/engines/stages/node_sources.py): the driver copies each model at its commit from
the hub to the results store once per sweep (`RESULTS/.models/<repo>@<commit>/`), one file
at a time through the head's disk (pipelines/engines/stages/hub_mirror.py); every GPU node
that runs the model reads it from there once into its Hugging Face cache (HF_HUB_CACHE: on
cluster.yaml's p4de workers, the NVMe instance store mounted at /mnt/nvme) and keeps it.
Over a sweep one node may run, and so cache, every GPU model whose tensor-parallel size
fits on it: that sum is the node's largest load, and the dry run checks each GPU node
type's cache against it.

Bytes are estimates (parameters x bytes per parameter of the dtype): the hub's file sizes
are not asked for, so a dry run needs no network. Times assume the transfer rates below.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipelines.engines.models.llava_original import CONVERTED_SUFFIX, LAYOUT
from pipelines.engines.models.model_schema import ModelConfig
from store.storage import Location
from store.yaml_file import YAMLBoundError, load_bounded

GB = 1e9
GIB = 2**30
BYTES_PER_PARAM = {"float32": 4, "bfloat16": 2, "float16": 2, "auto": 2}  # auto: bf16 hubs
DISK_HEADROOM = 0.8  # filesystem, the image's layers and vLLM's caches take the rest
MIRRORS = ".models"  # under the results root: <root>/.models/<repo>@<commit>/
# Assumed rates for the time estimates (not measured here: no hub or S3 from this machine).
MIRROR_BYTES_PER_S = 250e6  # hub -> results bucket, one copy per model
NODE_READ_BYTES_PER_S = 1e9  # results bucket -> a node's NVMe cache, parallel ranged reads
ASSUMPTIONS = (
    f"mirror {MIRROR_BYTES_PER_S / 1e6:g} MB/s hub -> bucket, node read "
    f"{NODE_READ_BYTES_PER_S / 1e6:g} MB/s bucket -> node cache (assumed, not measured); "
    f"a cache counts {DISK_HEADROOM:.0%} of its disk"
)
# Local NVMe instance store of GPU instance types (devices, bytes each), from AWS's
# instance-type pages; EC2 attaches it by itself, so cluster.yaml cannot declare it.
INSTANCE_STORE = {
    "p4d.24xlarge": (8, 1000e9),
    "p4de.24xlarge": (8, 1000e9),
    "p5.48xlarge": (8, 3840e9),
}


@dataclass(frozen=True)
class Weights:
    """One model's weights: bytes (estimated), hub source and mirror location."""

    name: str
    bytes: float
    gpus: int  # tensor-parallel size: the model runs only on nodes with this many GPUs
    source: str  # hf://REPO@REVISION, what the mirror copies
    mirror: str  # RESULTS/.models/REPO@REVISION/, what each node reads


@dataclass(frozen=True)
class NodeCache:
    """Where one GPU node type keeps model weights, and how many bytes that disk has."""

    name: str
    gpus: float
    instance_type: str
    bytes: float
    medium: str  # "NVMe instance store ..." or "root volume ..."


def mirror_location(repo: str, revision: str, results: Location | None, suffix: str = "") -> str:
    """`RESULTS/.models/<repo>@<revision><suffix>/` (RESULTS spelled out when the root is
    unknown)."""
    leaf = f"{repo}@{revision}{suffix}"
    if results is None:
        return f"RESULTS/{MIRRORS}/{leaf}/"
    return f"{results / MIRRORS / leaf}/"


def model_weights(cfg: ModelConfig, results: Location | None = None) -> Weights | None:
    """The weights a GPU model moves (None: not a GPU model, or its size unknown)."""
    if not cfg.gpus or not cfg.params_b:
        return None
    per_param = BYTES_PER_PARAM.get(cfg.dtype, 2)
    source, suffix = f"hf://{cfg.repo}@{cfg.revision}", ""
    if cfg.layout == LAYOUT:  # the checkpoint and its tower, converted into one mirror
        tower = cfg.vision_tower or "mm_vision_tower"
        source += f"+hf://{tower}@{cfg.vision_tower_revision or 'main'}"
        suffix = CONVERTED_SUFFIX
    return Weights(
        name=cfg.name,
        bytes=cfg.params_b * 1e9 * per_param,
        gpus=cfg.gpus,
        source=source,
        mirror=mirror_location(cfg.repo, cfg.revision, results, suffix),
    )


def node_caches(config: dict[str, Any]) -> dict[str, NodeCache]:
    """GPU node type -> its model cache: the instance type's NVMe store when it has one
    (INSTANCE_STORE), else its EBS volumes (BlockDeviceMappings)."""
    caches = {}
    for name, node in (config.get("available_node_types") or {}).items():
        gpus = float((node.get("resources") or {}).get("GPU", 0))
        if not gpus:
            continue
        node_config = node.get("node_config") or {}
        kind = str(node_config.get("InstanceType", "?"))
        if kind in INSTANCE_STORE:
            count, each = INSTANCE_STORE[kind]
            caches[name] = NodeCache(
                name, gpus, kind, count * each,
                f"NVMe instance store {count} x {each / GB:.0f} GB",
            )  # fmt: skip
            continue
        mappings = node_config.get("BlockDeviceMappings") or []
        size = sum(float((m.get("Ebs") or {}).get("VolumeSize", 0)) for m in mappings) * GIB
        if size:  # EBS sizes are GiB
            caches[name] = NodeCache(
                name, gpus, kind, size, f"root volume {size / GB:.0f} GB (no instance store)"
            )
    return caches


def head_volume(config: dict[str, Any]) -> float | None:
    """Bytes of the head node type's EBS volumes (None when the YAML names none)."""
    head = (config.get("available_node_types") or {}).get(config.get("head_node_type"), {})
    mappings = (head.get("node_config") or {}).get("BlockDeviceMappings") or []
    size = sum(float((m.get("Ebs") or {}).get("VolumeSize", 0)) for m in mappings) * GIB
    return size or None


def head_volume_from_yaml(path: Path | None) -> float | None:
    """`head_volume` of a cluster-launcher YAML (None when there is none to read)."""
    if path is None or not path.is_file():
        return None
    try:
        config = load_bounded(path, aliases=True)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, YAMLBoundError):
        return None
    return head_volume(config) if isinstance(config, dict) else None


def caches_from_yaml(path: Path | None) -> dict[str, NodeCache]:
    """`node_caches` of a cluster-launcher YAML (empty when there is none to read)."""
    if path is None or not path.is_file():
        return {}
    try:
        config = load_bounded(path, aliases=True)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, YAMLBoundError):
        return {}  # capacity.from_yaml has already named a broken file
    return node_caches(config) if isinstance(config, dict) else {}


def largest_load(weights: list[Weights], gpus: float) -> list[Weights]:
    """The models one node of `gpus` GPUs may run over a sweep, so cache: every one whose
    tensor-parallel size fits on it (nothing evicts a model once its run ends)."""
    return [w for w in weights if w.gpus <= gpus]


def cache_verdict(cache: NodeCache, weights: list[Weights]) -> str:
    """One line: the node type's cache against the largest model and its largest load."""
    usable = cache.bytes * DISK_HEADROOM
    load = largest_load(weights, cache.gpus)
    total = sum(w.bytes for w in load)
    head = (
        f"node type {cache.name} ({cache.instance_type}, {cache.gpus:g} GPUs): model cache "
        f"{cache.bytes / GB:.0f} GB on {cache.medium} ({usable / GB:.0f} GB for weights) "
        f"against its largest load {total / GB:.0f} GB ({len(load)} models with TP <= "
        f"{cache.gpus:g})"
    )
    if not load:
        return f"{head}: runs none of these models"
    largest = max(load, key=lambda w: w.bytes)
    if largest.bytes > usable:
        return f"{head}: too small for {largest.name} ({largest.bytes / GB:.0f} GB)"
    if total > usable:
        return (
            f"{head}: cannot hold them all (a node running every model fills its cache after "
            f"{usable / GB:.0f} GB: spread the models, or a larger disk)"
        )
    return f"{head}: holds them all"


def head_disk(configs: list[ModelConfig], volume: float | None = None) -> str:
    """One line: the most the head's download folder (HF_HUB_CACHE) holds at once over the
    sweep. Mirrors stream one file at a time for every model together
    (store.mirror_stream), so at most one weights file, bounded here by the largest model's
    weights. Original-layout LLaVA checkpoints are converted on the head one at a time, each
    original deleted once converted, while every converted copy stays (llava_convert's
    cache; pipelines/engines/models/llava_hub.py): their converted copies and the largest
    original. With the head's `volume` (bytes), the line ends with whether it holds that
    need."""
    streamed: list[Weights] = []
    converted: list[Weights] = []
    for cfg in configs:
        w = model_weights(cfg)
        if w is not None:
            (converted if cfg.layout == LAYOUT else streamed).append(w)
    largest = max(streamed, key=lambda w: w.bytes, default=None)
    one_file = largest.bytes if largest else 0.0
    copies = sum(w.bytes for w in converted)
    original = max(converted, key=lambda w: w.bytes, default=None)
    conversions = copies + (original.bytes if original else 0.0)
    line = (
        f"head disk (its HF_HUB_CACHE): at most {(one_file + conversions) / GB:.0f} GB at once: "
        f"{one_file / GB:.0f} GB for the mirrors, which fetch one file at a time for the whole "
        "sweep"
    )
    if largest:
        line += (
            f" (bound: {largest.name}'s weights, were they one file; hub checkpoints are "
            "sharded, and each file's size is checked against the free bytes before it is "
            "fetched)"
        )
    if original:
        line += (
            f", and {conversions / GB:.0f} GB for {len(converted)} original-layout LLaVA "
            f"checkpoint(s) converted there one at a time: their converted copies "
            f"({copies / GB:.0f} GB, kept) and the largest original ({original.bytes / GB:.0f}"
            f" GB, {original.name}'s; each is deleted once converted)"
        )
    if volume is not None:
        need = one_file + conversions
        verdict = "holds it" if need <= volume else "is too small for it"
        line += (
            f"; the head's volume ({volume / GB:.0f} GB, which also takes Ray's logs and "
            f"object spilling) {verdict}"
        )
    return line


def print_weights(
    configs: list[ModelConfig],
    caches: dict[str, NodeCache],
    results: Location | None = None,
    out: Any = None,
    head_bytes: float | None = None,
) -> None:
    """Per GPU model: bytes mirrored once and bytes each node reads, with their times, source
    and mirror; then the total and one cache verdict per GPU node type."""
    out = out or sys.stdout
    weights = [w for w in (model_weights(c, results) for c in configs) if w is not None]
    if not weights:
        return
    print("\nweights (estimate: parameters x dtype bytes): mirrored once per sweep from the hub "
          "to the results store, then read once by each GPU node that runs the model into "
          "its model cache:", file=out)  # fmt: skip
    print(f"{'model':34} {'mirror GB':>9} {'min':>5} {'node GB':>8} {'min':>5}  "
          "source -> mirror", file=out)  # fmt: skip
    for w in weights:
        mirror_min = w.bytes / MIRROR_BYTES_PER_S / 60
        read_min = w.bytes / NODE_READ_BYTES_PER_S / 60
        print(f"{w.name[:34]:34} {w.bytes / GB:>9.1f} {mirror_min:>5.1f} {w.bytes / GB:>8.1f} "
              f"{read_min:>5.1f}  {w.source} -> {w.mirror}", file=out)  # fmt: skip
    total = sum(w.bytes for w in weights)
    print(f"all {len(weights)} GPU models: {total / GB:.0f} GB mirrored once "
          f"({total / MIRROR_BYTES_PER_S / 3600:.1f} h); each node reads only the models it "
          "runs", file=out)  # fmt: skip
    converted = [c.name for c in configs if c.layout == LAYOUT and c.gpus and c.params_b]
    if converted:
        print(f"converted once to the llava-hf layout before mirroring (original-layout LLaVA "
              f"checkpoint + its vision tower; bytes above: the LM's): {', '.join(converted)}",
              file=out)  # fmt: skip
    print(head_disk(configs, head_bytes), file=out)
    for _, cache in sorted(caches.items()):
        print(cache_verdict(cache, weights), file=out)
    print(f"transfer assumptions: {ASSUMPTIONS}", file=out)
