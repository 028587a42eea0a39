"""What the sweep's GPU models download, from where, and whether the nodes' disks hold it.

Each GPU worker downloads a model's weights from the hub (`hf://REPO@REVISION`) into its own
Hugging Face cache the first time an engine of that model starts there, and keeps them:
over a sweep, a node may run (and so cache) every GPU model. The dry run prints, per model,
the bytes (estimated: parameters x bytes per parameter of its dtype; the hub's file sizes
are not asked for, so a dry run needs no network) and the source, then checks each GPU node
type's disk (its EBS volume in the cluster config) against the largest model and against
all of them together.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipelines.engines.model_config import ModelConfig

GB = 1e9
GIB = 2**30
BYTES_PER_PARAM = {"float32": 4, "bfloat16": 2, "float16": 2, "auto": 2}  # auto: bf16 hubs
DISK_HEADROOM = 0.8  # the image, the container layer and vLLM's caches take the rest


@dataclass(frozen=True)
class Weights:
    """One model's download: bytes (estimated) and source."""

    name: str
    bytes: float
    source: str


def model_weights(cfg: ModelConfig) -> Weights | None:
    """The weights a GPU model downloads (None: not a GPU model, or its size unknown)."""
    if not cfg.gpus or not cfg.params_b:
        return None
    per_param = BYTES_PER_PARAM.get(cfg.dtype, 2)
    return Weights(cfg.name, cfg.params_b * 1e9 * per_param, f"hf://{cfg.repo}@{cfg.revision}")


def node_disks(config: dict[str, Any]) -> dict[str, float]:
    """GPU node type -> bytes of its disk (the EBS volumes of its BlockDeviceMappings)."""
    disks = {}
    for name, node in (config.get("available_node_types") or {}).items():
        if not (node.get("resources") or {}).get("GPU"):
            continue
        mappings = (node.get("node_config") or {}).get("BlockDeviceMappings") or []
        size = sum(float((m.get("Ebs") or {}).get("VolumeSize", 0)) for m in mappings)
        if size:
            disks[name] = size * GIB  # EBS sizes are GiB
    return disks


def disks_from_yaml(path: Path | None) -> dict[str, float]:
    """`node_disks` of a cluster-launcher YAML (empty when there is none to read)."""
    if path is None or not path.is_file():
        return {}
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}  # capacity.from_yaml has already named a broken file
    return node_disks(config) if isinstance(config, dict) else {}


def print_weights(configs: list[ModelConfig], disks: dict[str, float], out: Any = None) -> None:
    """Per GPU model: bytes, source and the disk a node needs; then the disk checks."""
    out = out or sys.stdout
    weights = [w for w in (model_weights(c) for c in configs) if w is not None]
    if not weights:
        return
    print("\nweights (estimate: parameters x dtype bytes), downloaded by each GPU node "
          "that runs the model:", file=out)  # fmt: skip
    print(f"{'model':34} {'GB':>7}  {'node disk':>9}  source", file=out)
    for w in weights:
        need = w.bytes / DISK_HEADROOM
        print(f"{w.name[:34]:34} {w.bytes / GB:>7.1f}  {need / GB:>7.0f}GB  {w.source}", file=out)
    total = sum(w.bytes for w in weights)
    largest = max(weights, key=lambda w: w.bytes)
    print(f"all {len(weights)} GPU models: {total / GB:.0f} GB", file=out)
    for name, size in sorted(disks.items()):
        usable = size * DISK_HEADROOM
        verdict = "holds them all" if total <= usable else (
            f"cannot hold them all (a node running every model fills its disk after "
            f"{usable / GB:.0f} GB: spread the models, or a larger volume)"
        )  # fmt: skip
        if largest.bytes > usable:
            verdict = f"too small for {largest.name} ({largest.bytes / GB:.0f} GB)"
        print(f"node type {name}: disk {size / GB:.0f} GB ({usable / GB:.0f} GB for "
              f"weights): {verdict}", file=out)  # fmt: skip
