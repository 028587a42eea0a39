"""One builder per engine: each appends its inference step to a Ray Data pipeline.

All of them honour the row contract of `actors.contract`; the answer grammar rides on the
row. `vllm` is Ray's own maintained processor (`ray.data.llm`), so the GPU path is not ours
to keep in step with vLLM.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from actors.api_key import BadKeyError, checked_key
from actors.contract import ENGINE_OUTPUT, numpy_columns, object_array, prompt_ids_digest
from pipelines.engines.engine_kinds import BASELINES
from pipelines.engines.model_revisions import api_model, hub_revision
from pipelines.engines.model_schema import ModelConfig
from pipelines.engines.placement_groups import use_strict_pack
from pipelines.engines.reasoning import (
    OUT_OF_BUDGET,
    ThinkingMarkers,
    markers_for,
    out_of_budget,
)


@dataclass(frozen=True)
class EngineOptions:
    """How many engine replicas run, and how many rows each call takes."""

    pool_size: int = 1
    batch_size: int = 16
    cpus_per_actor: float = 0.5
    baseline_delay_s: float = 0.0  # baselines sleep this long per batch (latency stand-in)
    # vllm on a cluster of several nodes: the remote sources its stages load (NodeSources).
    sources: Any = None


# Light steps ask for a quarter CPU: on a 2-CPU node, engine actors holding a CPU each would
# otherwise leave no room for a default 1-CPU task, and the pipeline would stall. Steps with
# equal requests also fuse into one task.
LIGHT_CPUS = 0.25

# (dataset, model config, options) -> the dataset with the engine's step appended.
EngineStage = Callable[[Any, ModelConfig, EngineOptions], Any]


class NoGPUError(RuntimeError):
    """A GPU engine on a cluster without its GPUs (and no autoscaler adding them in time)."""


GPU_WAIT_S = 1200.0
GPU_WAIT_ENV = "GEOSEE_GPU_WAIT_S"
GPU_POLL_S = 5.0  # how often a waiting engine looks at the cluster's GPUs
LOGICAL_GPUS_ENV = "GEOSEE_LOGICAL_GPUS"


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


def cluster_gpus() -> float:
    """GPUs in the connected Ray cluster (0 on a CPU machine)."""
    import ray

    return float(ray.cluster_resources().get("GPU", 0))


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
    return kwargs


def hf_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    """The hf engine as an actor pool. A GPU model (a hub config) gets one GPU per replica,
    waiting for the autoscaler to add them (`check_gpus`), and runs on CUDA or fails: never
    silently on the CPU. A local entry (a checkpoint folder, a tiny model) takes a GPU when
    the cluster has one per replica, else runs on the CPU."""
    from actors.hf_engine import HFEngine

    kwargs = hf_engine_kwargs(cfg, opts)
    if cfg.gpus:
        check_gpus(cfg, replicas=opts.pool_size)
        kwargs["device"] = "cpu" if logical_gpus() else "cuda"
        gpus = 1.0
    else:
        gpus = 1.0 if cluster_gpus() >= opts.pool_size else 0.0
    return _actor_stage(ds, HFEngine, kwargs, opts, num_gpus=gpus)


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


def vllm_processor_config(cfg: ModelConfig, opts: EngineOptions, has_images: bool) -> Any:
    """The `vLLMEngineProcessorConfig` of a model: xgrammar, TP, a fixed-size pool, and the
    model's revision and remote-code setting in every stage (see
    `pipelines.engines.vllm_config`)."""
    from pipelines.engines.vllm_config import processor_config

    return processor_config(cfg, opts.pool_size, opts.batch_size, has_images, opts.sources)


# Ray's vLLM engine pops `sampling_params` off each row it runs, and its chat-template stage
# writes the rendered template into `prompt`, over the item's own question. The rows keep
# both aside here and get them back after the engine (results and GeoBuild rounds record
# what was asked; a stored `prompt` that is the whole template was seen here).
KEPT_PARAMS = "geosee_sampling_params"
KEPT_PROMPT = "geosee_prompt"
KEPT = {"sampling_params": KEPT_PARAMS, "prompt": KEPT_PROMPT}


def keep_asked() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Preprocess: keeps the row's sampling params (and question) aside for after the engine.
    A reasoning model's max_tokens grows by its thinking budget (vLLM forces the end of
    reasoning there), so the reasoning cannot eat the tokens the answer needs; the kept copy
    stays as asked."""

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        asked = row["sampling_params"]
        params = copy.deepcopy(dict(asked))
        budget = params.get("thinking_token_budget")
        if budget:
            params["max_tokens"] = int(params["max_tokens"]) + int(budget)
        out = {"sampling_params": params, KEPT_PARAMS: copy.deepcopy(asked)}
        if "prompt" in row:  # NoReGeo rows carry the item's question; GeoBuild rows do not
            out[KEPT_PROMPT] = row["prompt"]
        return out

    return preprocess


def vllm_postprocess(
    reasoning_end: str | None, markers: ThinkingMarkers | None = None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Postprocess: our error column; a reasoning model's answer without its reasoning (the
    text after the last end-of-reasoning marker; what the grammar constrained) and whether
    the row ran out of budget (`pipelines.engines.reasoning`)."""

    def postprocess(row: dict[str, Any]) -> dict[str, Any]:
        text = row.get("generated_text")
        if reasoning_end and isinstance(text, str) and reasoning_end in text:
            text = text.rsplit(reasoning_end, 1)[1].lstrip()
        # The ids vLLM received (Ray's vLLMOutputData.prompt_token_ids), as a digest.
        ids = row.get("prompt_token_ids")
        out = {
            **row,
            "generated_text": text,
            "engine_error": None,
            "prompt_ids_sha256": prompt_ids_digest(None if ids is None else list(ids)),
        }
        for column, kept in KEPT.items():
            if kept in out:
                out[column] = out.pop(kept)
        if markers is not None:
            asked = out["sampling_params"]
            budget = int(asked.get("thinking_token_budget") or 0)
            out[OUT_OF_BUDGET] = out_of_budget(
                list(row.get("prompt_token_ids") or []),
                list(row.get("generated_tokens") or []),
                markers,
                budget,
                int(asked["max_tokens"]) + budget,
            )
        return out

    return postprocess


def reasoning_markers(cfg: ModelConfig) -> ThinkingMarkers | None:
    """The model's reasoning markers as token ids, from its tokenizer (None: not a reasoning
    model; its tokenizer is then never loaded here)."""
    if not cfg.reasoning_parser:
        return None
    from transformers import AutoTokenizer

    from pipelines.engines.vllm_config import tokenizer_source

    source = tokenizer_source(cfg) or cfg.source
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=cfg.trust_remote_code)
    return markers_for(cfg, tokenizer)


def build_vllm_processor(cfg: ModelConfig, opts: EngineOptions) -> Any:
    """Ray's processor for the model (not yet applied to a dataset)."""
    from ray.data.llm import build_processor

    from pipelines.engines.chained_stage import chain_template_and_tokenize
    from pipelines.engines.model_fields import REASONING_END

    config = vllm_processor_config(cfg, opts, has_images=cfg.modality == "image-text")
    end = REASONING_END[cfg.reasoning_parser] if cfg.reasoning_parser else None
    # Ray maps pre/postprocess with a whole CPU each by default; on a 2-CPU node, next to
    # the engine actor (1 CPU) and the tokenizer stages, that stalled the run (seen here).
    light = {"num_cpus": LIGHT_CPUS}
    processor = build_processor(
        config,
        preprocess=keep_asked(),
        postprocess=vllm_postprocess(end, reasoning_markers(cfg)),
        preprocess_map_kwargs=light,
        postprocess_map_kwargs=light,
    )
    use_strict_pack(engine_stage_of(processor))
    chain_template_and_tokenize(processor)
    if opts.sources is not None:
        from pipelines.engines.node_stages import download_before_prepare_multimodal

        download_before_prepare_multimodal(processor)
    return processor


def engine_stage_of(processor: Any) -> Any:
    """The vLLM engine stage of Ray's processor."""
    from ray.llm._internal.batch.stages.vllm_engine_stage import vLLMEngineStage

    return next(s for s in processor.stages.values() if isinstance(s, vLLMEngineStage))


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
    from pipelines.engines.gpu_request import GPURequest

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
