"""What every engine stage is built with: its options, its signature, the CPU share of the
light steps around it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipelines.engines.models.model_schema import ModelConfig


@dataclass(frozen=True)
class EngineOptions:
    """How many engine replicas run, and how many rows each call takes."""

    pool_size: int = 1
    batch_size: int = 16
    cpus_per_actor: float = 0.5
    baseline_delay_s: float = 0.0  # baselines sleep this long per batch (latency stand-in)
    # vllm on a cluster of several nodes: the remote sources its stages load (NodeSources).
    sources: Any = None
    # The request cache folder (store.request_cache) the hf and http engines keep each
    # answer in and answer from: evaluate sets the model folder's; None keeps nothing.
    request_cache: str | None = None


# Light steps ask for a quarter CPU: on a 2-CPU node, engine actors holding a CPU each would
# otherwise leave no room for a default 1-CPU task, and the pipeline would stall. Steps with
# equal requests also fuse into one task.
LIGHT_CPUS = 0.25

# (dataset, model config, options) -> the dataset with the engine's step appended.
EngineStage = Callable[[Any, ModelConfig, EngineOptions], Any]
