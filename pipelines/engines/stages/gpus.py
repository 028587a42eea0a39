"""The GPUs an engine needs: counted in the connected cluster, asked of its autoscaler and
waited for, or refused in one line when the cluster can never hold them."""

from __future__ import annotations

import os
import sys
import time

from pipelines.engines.models.model_schema import ModelConfig


class NoGPUError(RuntimeError):
    """A GPU engine on a cluster without its GPUs (and no autoscaler adding them in time)."""


GPU_WAIT_S = 1200.0

GPU_WAIT_ENV = "GEOSEE_GPU_WAIT_S"

GPU_POLL_S = 5.0  # how often a waiting engine looks at the cluster's GPUs

LOGICAL_GPUS_ENV = "GEOSEE_LOGICAL_GPUS"


def cluster_gpus() -> float:
    """GPUs in the connected Ray cluster (0 on a CPU machine)."""
    import ray

    return float(ray.cluster_resources().get("GPU", 0))


def logical_gpus() -> bool:
    """GEOSEE_LOGICAL_GPUS=1: the cluster's GPUs are Ray resources without CUDA devices (a
    test cluster on one machine), so an hf GPU model is placed by them and computes on the
    CPU, as asked: the only way it ever runs on the CPU."""
    if os.environ.get(LOGICAL_GPUS_ENV) == "1":
        print(
            f"{LOGICAL_GPUS_ENV}=1: hf GPU actors take logical GPUs and compute on the CPU",
            file=sys.stderr,
            flush=True,
        )
        return True
    return False


def gpu_wait_s() -> float:
    """How long an engine waits for the autoscaler's GPU nodes (GEOSEE_GPU_WAIT_S, default
    GPU_WAIT_S: a p4de boots and pulls the image in about 10 minutes)."""
    try:
        return max(0.0, float(os.environ.get(GPU_WAIT_ENV, GPU_WAIT_S)))
    except ValueError:
        return GPU_WAIT_S


def check_gpus(cfg: ModelConfig, replicas: int = 1) -> None:
    """Return once the cluster holds `replicas` engine replicas of the model. On an
    autoscaling cluster that can grow to them, ask its autoscaler for them and wait (saying
    why, up to `gpu_wait_s()`); NoGPUError when they are not there in time, or at once
    when the cluster can never have them."""
    need = float(cfg.tensor_parallel_size * replicas)
    if cluster_gpus() >= need:
        return
    from pipelines.sweep.capacity import discover

    capacity = discover(None, None, connected=True)
    never = capacity.reason_not_runnable(float(cfg.tensor_parallel_size))
    if never or capacity.total < need:
        raise NoGPUError(
            f"the {cfg.engine} engine needs {need:g} GPU(s) for {cfg.name} and this Ray "
            f"cluster has {cluster_gpus():g} and can grow to {capacity.total:g} "
            f"({capacity.source}); use a local checkpoint with --engine hf on CPU, or a GPU "
            f"cluster"
        )
    wait_gpus(cfg.name, [float(cfg.tensor_parallel_size)] * replicas, need, gpu_wait_s())


def wait_gpus(name: str, bundles: list[float], need: float, limit_s: float) -> None:
    """Ask the autoscaler for `bundles` (GPUs per engine replica) and wait until the cluster
    has `need` GPUs, for at most `limit_s` seconds; the request is withdrawn either way
    (the engine's actors hold their nodes from then on)."""
    from pipelines.engines.stages.gpu_request import GPURequest

    print(
        f"{name}: waiting up to {limit_s:g} s for {need:g} GPU(s): the cluster has "
        f"{cluster_gpus():g} now and its autoscaler is asked for the rest",
        file=sys.stderr,
        flush=True,
    )
    request = GPURequest(f"engine-{name}")
    request.set(bundles)
    try:
        deadline = time.monotonic() + limit_s
        while cluster_gpus() < need:
            if time.monotonic() >= deadline:
                raise NoGPUError(
                    f"{name}: {need:g} GPU(s) did not appear within {limit_s:g} s "
                    f"({GPU_WAIT_ENV} sets the limit); the cluster has {cluster_gpus():g}"
                )
            request.set(bundles)  # renewed while it waits
            time.sleep(min(GPU_POLL_S, max(0.01, deadline - time.monotonic())))
    finally:
        request.clear()
    print(f"{name}: {cluster_gpus():g} GPU(s) up", file=sys.stderr, flush=True)
