"""How many GPUs the sweep may plan for: what an autoscaling cluster can grow to, not what it
has at start (an autoscaling cluster often starts with no GPU worker at all).

Sources, first that answers:
1. `--gpus N` (the user knows best; per-node size unknown).
2. A cluster-launcher YAML given with `--cluster-config` (e.g. the repository's cluster.yaml,
   for a dry run on a laptop).
3. The autoscaler's config in the GCS (autoscaler v2 publishes it; Ray Train and Ray Data
   read the same key).
4. `~/ray_bootstrap_config.yaml`, which `ray up` writes on the head node, where `ray job
   submit` runs the sweep's driver (autoscaler v1 publishes nothing to the GCS).
5. The GPUs the cluster has now (a fixed cluster, or local mode); in a dry run, which starts
   no Ray, the GPUs this machine shows (so a dry run on a laptop lists GPU models as not run
   unless a cluster is named with 1. or 2.).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pipelines.sweep.cluster_image import image_mismatch
from store.yaml_file import YAMLBoundError, load_bounded

if TYPE_CHECKING:
    from pipelines.engines.models.model_schema import ModelConfig

BOOTSTRAP_CONFIG = Path.home() / "ray_bootstrap_config.yaml"


@dataclass(frozen=True)
class GPUCapacity:
    """GPUs the cluster can hold at most, and on one node (None: not known)."""

    total: float
    per_node: float | None
    source: str

    def reason_not_runnable(self, gpus: float) -> str | None:
        """Why a model needing `gpus` GPUs (its tensor-parallel size) can never run here."""
        if self.per_node is not None and gpus > self.per_node:
            return (
                f"not run: tensor parallel {gpus:g} needs {gpus:g} GPUs on one node; the largest "
                f"node ({self.source}) has {self.per_node:g}"
            )
        if gpus > self.total:
            return f"not run: needs {gpus:g} GPU(s), the cluster ({self.source}) has {self.total:g}"
        return None


def wider_than_any_node(configs: list[ModelConfig], capacity: GPUCapacity) -> str | None:
    """One line naming the models whose tensor-parallel size exceeds the GPUs of the largest
    node (None: every GPU model fits on one node, or the node size is unknown). An engine's
    tensor-parallel workers belong on one node (issue 36 packs their placement group
    strictly), so such a model could only wait forever or fail: the sweep refuses the
    selection instead of listing it as not run."""
    if capacity.per_node is None:
        return None
    wide = [c for c in configs if c.gpus > capacity.per_node and not c.blocked]
    if not wide:
        return None
    named = ", ".join(f"{c.name} (tensor_parallel_size {c.gpus})" for c in wide[:3])
    more = f" and {len(wide) - 3} more" if len(wide) > 3 else ""
    return (
        f"{named}{more}: one engine runs on one node, and the largest node ({capacity.source}) "
        f"has {capacity.per_node:g} GPUs; lower tensor_parallel_size, use a larger node type, "
        f"or leave the model(s) out with --only"
    )


def from_launcher_config(config: dict[str, Any], source: str) -> GPUCapacity:
    """Capacity of a cluster-launcher config: each worker type's GPUs x its max_workers, the
    GPU-richest types first, within the cluster-wide max_workers; plus the head's GPUs."""
    types = config.get("available_node_types") or {}
    head_type = config.get("head_node_type")
    budget = config.get("max_workers", math.inf)
    head_gpus = float((types.get(head_type, {}).get("resources") or {}).get("GPU", 0))
    workers = [
        (float((t.get("resources") or {}).get("GPU", 0)), t.get("max_workers", budget))
        for name, t in types.items()
        if name != head_type
    ]
    total, per_node = head_gpus, head_gpus
    for gpus, count in sorted(workers, reverse=True):
        nodes = min(count, budget)
        if gpus and nodes:
            total += gpus * nodes
            per_node = max(per_node, gpus)
        budget -= nodes
    return GPUCapacity(total=total, per_node=per_node, source=source)


def from_yaml(path: Path) -> GPUCapacity:
    """GPU capacity of the node types a cluster description (cluster.yaml) lists; a config
    whose docker image is not the one the pins need is refused (ValueError)."""
    try:
        config = load_bounded(path, aliases=True)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, YAMLBoundError) as err:
        raise ValueError(f"{path}: not a readable cluster-launcher YAML ({err})") from err
    if not isinstance(config, dict) or "available_node_types" not in config:
        raise ValueError(f"{path}: not a cluster-launcher config (no available_node_types)")
    mismatch = image_mismatch(config, str(path))
    if mismatch:  # a cluster of another image runs another vLLM/CUDA than the pins
        raise ValueError(mismatch)
    return from_launcher_config(config, source=str(path))


def from_gcs() -> GPUCapacity | None:
    """The autoscaler's published config (autoscaler v2), or None when there is none."""
    from ray._private.state import state

    try:
        config = state.get_cluster_config()
    except Exception:  # older GCS, or not connected: fall through to the next source
        return None
    if config is None or not config.node_group_configs:
        return None
    total = per_node = 0.0
    for group in config.node_group_configs:
        gpus = float(group.resources.get("GPU", 0))
        if gpus and group.max_count:
            count = math.inf if group.max_count == -1 else group.max_count
            total += gpus * count
            per_node = max(per_node, gpus)
    limit = config.max_resources.get("GPU")
    if limit is not None:
        total = min(total, float(limit))
    return GPUCapacity(total=total, per_node=per_node, source="autoscaler config")


def discover(gpus_flag: float | None, cluster_config: Path | None, connected: bool) -> GPUCapacity:
    """The sweep's GPU capacity from the first source that answers (module docstring).

    `connected`: Ray is up, so the GCS and the present GPUs can be asked; a dry run is not.
    """
    if gpus_flag is not None:
        return GPUCapacity(total=gpus_flag, per_node=None, source="--gpus")
    if cluster_config is not None:
        return from_yaml(cluster_config)
    if connected:
        published = from_gcs()
        if published is not None:
            return published
    if BOOTSTRAP_CONFIG.is_file():
        return from_yaml(BOOTSTRAP_CONFIG)
    if not connected:
        return GPUCapacity(
            total=float(gpus_on_this_machine()),
            per_node=None,
            source="this machine; --gpus N or --cluster-config FILE plans for a cluster",
        )
    import ray

    present = float(ray.cluster_resources().get("GPU", 0))
    return GPUCapacity(total=present, per_node=None, source="GPUs present")


def gpus_on_this_machine() -> int:
    """NVIDIA GPUs this process may use, without CUDA or Ray: the driver's device files,
    narrowed by CUDA_VISIBLE_DEVICES when it is set (empty or -1 hides them all)."""
    devices = [p for p in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", p)]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return len(devices)
    chosen = [v for v in visible.split(",") if v.strip() and v.strip() != "-1"]
    if visible.strip().startswith("-1"):
        return 0
    return min(len(chosen), len(devices))
