"""One builder per engine: each appends its inference step to a Ray Data pipeline.

All of them honour the row contract of `actors.contract`; the answer grammar rides on the
row. `vllm` is Ray's own maintained processor (`ray.data.llm`, built in `vllm_path`), so the
GPU path is not ours to keep in step with vLLM.
"""

from __future__ import annotations

import os
from typing import Any

from actors.api_key import BadKeyError, checked_key
from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.engines.models.model_revisions import api_model, hub_revision
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages.gpus import check_gpus, cluster_gpus, logical_gpus
from pipelines.engines.stages.options import LIGHT_CPUS, EngineOptions, EngineStage
from pipelines.engines.stages.vllm_path import vllm_stage


class MissingKeyError(RuntimeError):
    """An http model whose API key variable is not set, or holds what no header can carry."""


def _actor_stage(
    ds: Any,
    cls: type,
    kwargs: dict[str, Any],
    opts: EngineOptions,
    num_gpus: float = 0,
    batch_format: str = "numpy",
) -> Any:
    import ray

    remote_args: dict[str, Any] = (
        {"num_gpus": num_gpus} if num_gpus else {"num_cpus": opts.cpus_per_actor}
    )
    return ds.map_batches(
        cls,
        fn_constructor_kwargs=kwargs,
        batch_size=opts.batch_size,
        compute=ray.data.ActorPoolStrategy(size=opts.pool_size),
        batch_format=batch_format,
        **remote_args,
    )


def baseline_stage(engine: str) -> EngineStage:
    """The stage of a baseline engine, run as a plain task (no model to hold in an actor)."""

    def build(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
        from pipelines.noregeo.baseline_step import baseline_engine

        # Baselines hold no state: plain tasks, which start at once and fuse with their
        # neighbours, where actors would first spawn and import, and a fixed-size pool would
        # keep Ray from fusing (measured: 3 s of a 4 s run). --pool-size does not apply.
        return ds.map_batches(
            baseline_engine(engine, opts.baseline_delay_s),
            batch_size=opts.batch_size,
            num_cpus=LIGHT_CPUS,  # as the steps around it, or Ray will not fuse them
            batch_format="pyarrow",
        )

    return build


def oracle_actor_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    """The oracle in a fixed pool of actors, sleeping `baseline_delay_s` per batch: a model
    engine's shape without a model, for benchmarks and fault-tolerance checks."""
    from actors.baselines import OracleEngine

    kwargs = {"delay_s": opts.baseline_delay_s}
    return _actor_stage(ds, OracleEngine, kwargs, opts, batch_format="pyarrow")


def hf_engine_kwargs(cfg: ModelConfig, opts: EngineOptions) -> dict[str, Any]:
    """The hf engine actor's constructor arguments (device aside)."""
    # On several nodes the model's mirror in the results store (the actor fetches it).
    mirrored = opts.sources is not None
    kwargs: dict[str, Any] = {
        "model": opts.sources.mirror if mirrored else cfg.source,
        "revision": None if mirrored else hub_revision(cfg.revision),
        "dtype": cfg.dtype,
        "batch_size": opts.batch_size,
        "trust_remote_code": cfg.trust_remote_code,
        "content_format": cfg.content_format,
        "system_as_string": cfg.system_prompt_as_string,
    }
    if cfg.enable_thinking is not None:  # the paper's Qwen3: thinking off, as on vllm
        kwargs["chat_template_kwargs"] = {"enable_thinking": cfg.enable_thinking}
    if opts.request_cache:
        kwargs["request_cache"] = opts.request_cache
    return kwargs


def hf_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    """The hf engine as an actor pool. A GPU model (a hub config) gets one GPU per replica,
    waiting for the autoscaler to add them (`check_gpus`), and runs on CUDA or fails: never
    silently on the CPU. A local entry (a checkpoint folder, a tiny model) takes a GPU when
    the cluster has one per replica, else runs on the CPU."""
    from actors.hf_engine import HFEngine

    kwargs, gpus = hf_placement(cfg, opts)
    return _actor_stage(ds, HFEngine, kwargs, opts, num_gpus=gpus)


def hf_placement(cfg: ModelConfig, opts: EngineOptions) -> tuple[dict[str, Any], float]:
    """An hf replica's constructor arguments and GPUs (see `hf_stage`); GeoBuild's resident
    hf hosts are placed the same way."""
    kwargs = hf_engine_kwargs(cfg, opts)
    if cfg.gpus:
        check_gpus(cfg, replicas=opts.pool_size)
        kwargs["device"] = "cpu" if logical_gpus() else "cuda"
        return kwargs, 1.0
    return kwargs, 1.0 if cluster_gpus() >= opts.pool_size else 0.0


def http_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    """The http engine in a pool of actors; the API key goes through Ray's object store.

    Not through `runtime_env={"env_vars": ...}`: Ray writes runtime envs in plain text to
    the session's logs (runtime_env_agent.log, raylet.out, ...), measured 6 of 6 runs. Not
    as a constructor argument either: those are pickled into the actor's task spec. The
    driver puts the key (bytes) with `ray.put` and passes the ObjectRef, which the task spec
    holds only as an ID; each actor fetches the value from the object store (shared memory)
    at init. Workers whose own environment has the variable use that instead.

    What holds, and what does not: the object store is memory, and Ray writes an object to
    disk only when the store passes its spill threshold (by default 80% full) and picks that
    object to spill; then the key's bytes would sit in the session's spill folder until the
    object is freed, when the dataset holding the ref is gone. Exporting the variable on
    every node makes the actors ignore the ref, but the driver still puts it: a config
    option to skip the put (or an `api_key_file` read on the nodes) would close that gap.
    """
    import ray

    from actors.http_engine import HTTPEngine

    if not cfg.api_base:
        raise ValueError(f"model {cfg.name} has no api_base; the http engine needs one")
    kwargs: dict[str, Any] = {
        "base_url": cfg.api_base,
        "model": api_model(cfg),
        "api_key_env": cfg.api_key_env,
        "constraint": cfg.api_constraint,
        "deadline_s": cfg.api_deadline_s,
    }
    if opts.request_cache:
        kwargs["request_cache"] = opts.request_cache
    if cfg.api_key_env:
        # Checked here, on the driver, before anything is written: a clear error naming
        # the variable rather than one failed actor per replica.
        kwargs["api_key_ref"] = ray.put(api_key(cfg).encode())
    return _actor_stage(ds, HTTPEngine, kwargs, opts)


def api_key(cfg: ModelConfig) -> str:
    """The model's API key from the driver's environment; a clear error names the variable."""
    # Stripped of a line end (said once) or refused in one line: actors/api_key.py.
    try:
        value = checked_key(os.environ.get(cfg.api_key_env or "", ""), cfg.api_key_env or "", True)
    except BadKeyError as err:
        raise MissingKeyError(f"model {cfg.name}: {err}") from None
    if not value:
        raise MissingKeyError(
            f"model {cfg.name} reads its API key from ${cfg.api_key_env}, which is not set; "
            f"export it before running, e.g. `export {cfg.api_key_env}=...`"
        )
    return value


# evaluate fuses these with its scorer and writer (pipelines.noregeo.baseline_step); a stage put in
# their place in STAGES (tests do) runs as any other engine stage.
BASELINE_STAGES: dict[str, EngineStage] = {name: baseline_stage(name) for name in BASELINES}

STAGES: dict[str, EngineStage] = {
    **BASELINE_STAGES,
    "hf": hf_stage,
    "http": http_stage,
    "vllm": vllm_stage,
}
