"""One builder per engine: each appends its inference step to a Ray Data pipeline.

All of them honour the row contract of `actors.contract`; the answer grammar rides on the
row. `vllm` is Ray's own maintained processor (`ray.data.llm`), so the GPU path is not ours
to keep in step with vLLM.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from actors.contract import ENGINE_OUTPUT, numpy_columns, object_array
from pipelines.engines.model_config import BASELINES, ModelConfig, hub_revision


@dataclass(frozen=True)
class EngineOptions:
    """How many engine replicas run, and how many rows each call takes."""

    pool_size: int = 1
    batch_size: int = 16
    cpus_per_actor: float = 0.5
    baseline_delay_s: float = 0.0  # baselines sleep this long per batch (latency stand-in)


# Light steps ask for a quarter CPU: on a 2-CPU node, engine actors holding a CPU each would
# otherwise leave no room for a default 1-CPU task, and the pipeline would stall. Steps with
# equal requests also fuse into one task.
LIGHT_CPUS = 0.25

# (dataset, model config, options) -> the dataset with the engine's step appended.
EngineStage = Callable[[Any, ModelConfig, EngineOptions], Any]


class NoGPUError(RuntimeError):
    """vLLM asked for on a cluster with no GPUs."""


class MissingKeyError(RuntimeError):
    """An http model whose API key variable is not set."""


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


def cluster_gpus() -> float:
    """GPUs in the connected Ray cluster (0 on a CPU machine)."""
    import ray

    return float(ray.cluster_resources().get("GPU", 0))


def hf_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    """The hf engine as an actor pool: one GPU per replica when the cluster has them."""
    from actors.hf_engine import HFEngine

    gpus = 1.0 if cluster_gpus() >= opts.pool_size else 0.0
    kwargs = {
        "model": cfg.repo,
        "revision": hub_revision(cfg.revision),
        "dtype": cfg.dtype,
        "batch_size": opts.batch_size,
        "trust_remote_code": cfg.trust_remote_code,
    }
    return _actor_stage(ds, HFEngine, kwargs, opts, num_gpus=gpus)


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
        "model": cfg.repo,
        "api_key_env": cfg.api_key_env,
        "constraint": cfg.api_constraint,
        "deadline_s": cfg.api_deadline_s,
    }
    if cfg.api_key_env:
        # Checked here, on the driver, before anything is written: a clear error naming
        # the variable rather than one failed actor per replica.
        kwargs["api_key_ref"] = ray.put(api_key(cfg).encode())
    return _actor_stage(ds, HTTPEngine, kwargs, opts)


def api_key(cfg: ModelConfig) -> str:
    """The model's API key from the driver's environment; a clear error names the variable."""
    value = os.environ.get(cfg.api_key_env or "", "")
    if not value:
        raise MissingKeyError(
            f"model {cfg.name} reads its API key from ${cfg.api_key_env}, which is not set; "
            f"export it before running, e.g. `export {cfg.api_key_env}=...`"
        )
    return value


def vllm_processor_config(cfg: ModelConfig, opts: EngineOptions, has_images: bool) -> Any:
    """The `vLLMEngineProcessorConfig` of a model: xgrammar, TP, a fixed-size pool, and the
    model's revision and remote-code setting in every stage (see
    `pipelines.engines.vllm_config`)."""
    from pipelines.engines.vllm_config import processor_config

    return processor_config(cfg, opts.pool_size, opts.batch_size, has_images)


# Ray's vLLM engine pops `sampling_params` off each row it runs, and its chat-template stage
# writes the rendered template into `prompt`, over the item's own question. The rows keep
# both aside here and get them back after the engine (results and GeoBuild rounds record
# what was asked; a stored `prompt` that is the whole template was seen here).
KEPT_PARAMS = "geosee_sampling_params"
KEPT_PROMPT = "geosee_prompt"
KEPT = {"sampling_params": KEPT_PARAMS, "prompt": KEPT_PROMPT}


def thinking_budget(extra_tokens: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Preprocess: keeps the row's sampling params aside for after the engine, and a
    reasoning model's max_tokens grows by its thinking budget, so the reasoning cannot eat
    the tokens the answer needs (the kept copy stays as asked)."""

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        asked = row["sampling_params"]
        params = copy.deepcopy(dict(asked))
        if extra_tokens:
            params["max_tokens"] = int(params["max_tokens"]) + extra_tokens
        out = {"sampling_params": params, KEPT_PARAMS: copy.deepcopy(asked)}
        if "prompt" in row:  # NoReGeo rows carry the item's question; GeoBuild rows do not
            out[KEPT_PROMPT] = row["prompt"]
        return out

    return preprocess


def vllm_postprocess(reasoning_end: str | None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Postprocess: our error column, and a reasoning model's answer without its reasoning
    (the text after the last end-of-reasoning marker; what the grammar constrained)."""

    def postprocess(row: dict[str, Any]) -> dict[str, Any]:
        text = row.get("generated_text")
        if reasoning_end and isinstance(text, str) and reasoning_end in text:
            text = text.rsplit(reasoning_end, 1)[1].lstrip()
        out = {**row, "generated_text": text, "engine_error": None}
        for column, kept in KEPT.items():
            if kept in out:
                out[column] = out.pop(kept)
        return out

    return postprocess


def build_vllm_processor(cfg: ModelConfig, opts: EngineOptions) -> Any:
    """Ray's processor for the model (not yet applied to a dataset)."""
    from ray.data.llm import build_processor

    from pipelines.engines.model_config import REASONING_END

    config = vllm_processor_config(cfg, opts, has_images=cfg.modality == "image-text")
    end = REASONING_END[cfg.reasoning_parser] if cfg.reasoning_parser else None
    preprocess = thinking_budget(cfg.thinking_max_tokens)
    # Ray maps pre/postprocess with a whole CPU each by default; on a 2-CPU node, next to
    # the engine actor (1 CPU) and the tokenizer stages, that stalled the run (seen here).
    light = {"num_cpus": LIGHT_CPUS}
    return build_processor(
        config,
        preprocess=preprocess,
        postprocess=vllm_postprocess(end),
        preprocess_map_kwargs=light,
        postprocess_map_kwargs=light,
    )


def normalise_engine_errors(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows that failed inside ray.data.llm skip postprocess: give them our error column
    (and their kept columns back)."""
    out = dict(batch)
    n = len(next(iter(batch.values())))
    errors = batch.get("__inference_error__")
    out.pop("__inference_error__", None)
    for column, kept_column in KEPT.items():
        kept = out.pop(kept_column, None)
        if kept is None:
            continue
        # Failed rows skipped postprocess: their own values are still aside, and win.
        current = out.get(column)
        if current is None:
            current = np.array([None] * n, dtype=object)
        merged = [c if k is None else k for c, k in zip(current, kept, strict=True)]
        out[column] = object_array(merged)
    if errors is not None:
        engine_error = np.array([e if e else None for e in errors], dtype=object)
        out["engine_error"] = engine_error
    missing = pa.schema([f for f in ENGINE_OUTPUT if f.name not in out])
    out.update(numpy_columns(missing, {c: [None] * n for c in missing.names}))
    return out


def check_gpus(cfg: ModelConfig) -> None:
    """NoGPUError when the cluster cannot hold one engine replica of the model."""
    if cluster_gpus() < cfg.tensor_parallel_size:
        raise NoGPUError(
            f"the vllm engine needs {cfg.tensor_parallel_size} GPU(s) for {cfg.name} and this "
            f"Ray cluster has {cluster_gpus():g}; use --engine hf on CPU, or a GPU cluster"
        )


def vllm_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    """The vllm engine: Ray's processor (ray.data.llm) and our error column."""
    check_gpus(cfg)
    processor = build_vllm_processor(cfg, opts)
    return processor(ds).map_batches(normalise_engine_errors, num_cpus=LIGHT_CPUS)


# evaluate fuses these with its scorer and writer (pipelines.noregeo.baseline_step); a stage put in
# their place in STAGES (tests do) runs as any other engine stage.
BASELINE_STAGES: dict[str, EngineStage] = {name: baseline_stage(name) for name in BASELINES}
STAGES: dict[str, EngineStage] = {
    **BASELINE_STAGES,
    "hf": hf_stage,
    "http": http_stage,
    "vllm": vllm_stage,
}
