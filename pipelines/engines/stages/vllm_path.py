"""A model's vLLM path, read top to bottom in the order it runs.

`evaluate` and GeoBuild take a model config through these steps:

1. Sources for the nodes. On one node the stages and the engine load the local files; on a
   cluster of several nodes `node_sources.node_sources` mirrors every folder they load to
   the results store first (the caller does, before the canary: `EngineOptions.sources`).
2. Tokenizer and chat template: where the CPU stages load them and the tokenize stage's copy
   that adds no special tokens (`vllm_config.tokenizer_source`, `tokenize_stage_source`,
   `prompts.plain_tokenizer`).
3. Processor config: the engine's arguments and each stage's settings
   (`vllm_config.processor_config`).
4. Ray's processor, with our rows around it (`vllm_rows`: what was asked kept aside, our
   columns after the engine) and a reasoning model's markers (`prompts.reasoning`).
5. Placement: a tensor-parallel engine's bundles on one node (`placement_groups`), the
   chat-template and tokenize stages chained in one actor (`chained_stage`), and on several
   nodes the prepare-multimodal stage downloading its source first (`node_stages`).
6. The canary: the processor's stages up to its engine on a few of the run's rows
   (`canary_stage`; its checks in `prompts.prompt_canary`), before the engine loads.
7. The stage: the processor applied to the dataset, failed rows given our columns
   (`vllm_rows`).

Each step is one call here, in this order; the modules named hold how. `before_rows` is
steps 2-6 on a run's driver (GPUs first, `gpus.check_gpus`: a cluster that can never hold
the engine refuses before anything loads) and hands on step 7, the stage that runs the
processor it checked (`checked_stage`); `vllm_stage` is steps 2-5 and 7 for a caller without
it (the engine table's entry). The modules that
import Ray's LLM package or the mirror's store are imported where they are called, so
importing this one (every `evaluate` does) stays light.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipelines.engines.models.model_fields import REASONING_END
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.reasoning import ThinkingMarkers, markers_for
from pipelines.engines.stages.gpus import check_gpus
from pipelines.engines.stages.options import LIGHT_CPUS, EngineOptions, EngineStage
from pipelines.engines.stages.placement_groups import use_strict_pack
from pipelines.engines.stages.vllm_rows import keep_asked, normalise_engine_errors, vllm_postprocess


def before_rows(
    cfg: ModelConfig, opts: EngineOptions, rows: Iterable[dict[str, Any]]
) -> tuple[EngineStage, dict[str, Any]]:
    """Steps 2-6 on the driver, before any row: the GPUs the run's engines need (waited for,
    or NoGPUError at once), the processor built once, and the canary on `rows` (request rows
    of the run) through it. The engine stage that runs that processor (step 7), and the
    canary's record for the run record."""
    check_gpus(cfg, replicas=opts.pool_size)
    processor = build_vllm_processor(cfg, opts)
    record = run_canary_on(processor, cfg, opts, rows)
    return checked_stage(processor), record


def build_vllm_processor(cfg: ModelConfig, opts: EngineOptions) -> Any:
    """Steps 2-5: Ray's processor for the model (not yet applied to a dataset)."""
    from ray.data.llm import build_processor

    from pipelines.engines.stages.chained_stage import chain_template_and_tokenize

    # 2-3. Tokenizer, chat template and the processor config (the sources: opts.sources).
    config = vllm_processor_config(cfg, opts, has_images=cfg.modality == "image-text")
    # 4. Ray's processor with our rows around it. Ray maps pre/postprocess with a whole CPU
    # each by default; on a 2-CPU node, next to the engine actor (1 CPU) and the tokenizer
    # stages, that stalled the run (seen here).
    end = REASONING_END[cfg.reasoning_parser] if cfg.reasoning_parser else None
    light = {"num_cpus": LIGHT_CPUS}
    processor = build_processor(
        config,
        preprocess=keep_asked(),
        postprocess=vllm_postprocess(end, reasoning_markers(cfg)),
        preprocess_map_kwargs=light,
        postprocess_map_kwargs=light,
    )
    # 5. Placement: the engine's bundles, the chained CPU stages, the nodes' downloads.
    engine = engine_stage_of(processor)
    if opts.request_cache:  # each answer kept as it comes, none asked twice (vllm_cache)
        from pipelines.engines.stages.vllm_cache import use_request_cache

        use_request_cache(engine, opts.request_cache, keep_tokens=bool(cfg.reasoning_parser))
    use_strict_pack(engine)  # after: an assignment to the stage makes Ray rebuild its own
    chain_template_and_tokenize(processor)
    if opts.sources is not None:
        from pipelines.engines.stages.node_stages import download_before_prepare_multimodal

        download_before_prepare_multimodal(processor)
    return processor


def vllm_processor_config(cfg: ModelConfig, opts: EngineOptions, has_images: bool) -> Any:
    """Steps 2-3: the `vLLMEngineProcessorConfig` of a model: xgrammar, TP, a fixed-size
    pool, and the model's revision and remote-code setting in every stage (see
    `vllm_config`)."""
    from pipelines.engines.stages.vllm_config import processor_config

    return processor_config(cfg, opts.pool_size, opts.batch_size, has_images, opts.sources)


def reasoning_markers(cfg: ModelConfig) -> ThinkingMarkers | None:
    """Step 4: the model's reasoning markers as token ids, from its tokenizer (None: not a
    reasoning model; its tokenizer is then never loaded here)."""
    if not cfg.reasoning_parser:
        return None
    from transformers import AutoTokenizer

    from pipelines.engines.stages.vllm_config import tokenizer_source

    source = tokenizer_source(cfg) or cfg.source
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=cfg.trust_remote_code)
    return markers_for(cfg, tokenizer)


def engine_stage_of(processor: Any) -> Any:
    """The vLLM engine stage of Ray's processor."""
    from ray.llm._internal.batch.stages.vllm_engine_stage import vLLMEngineStage

    return next(s for s in processor.stages.values() if isinstance(s, vLLMEngineStage))


def check_model_prompts(
    cfg: ModelConfig, opts: EngineOptions, rows: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """Step 6 alone: the canary on the processor `build_vllm_processor` builds for these
    options (the same builder, config and options as the run's, so the same sources and
    stages); its record."""
    return run_canary_on(build_vllm_processor(cfg, opts), cfg, opts, rows)


def run_canary_on(
    processor: Any, cfg: ModelConfig, opts: EngineOptions, rows: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """Step 6: the canary through `processor`. On one node (no remote sources) its stages
    run here, in the driver, beside where their actors would (canary_stage.render_here); on
    several, in actors placed as the run's."""
    from pipelines.engines.stages.canary_stage import run_canary

    return run_canary(processor, cfg, rows, here=opts.sources is None)


def checked_stage(processor: Any) -> EngineStage:
    """Step 7 with the processor `before_rows` built and checked: the vllm engine stage
    that applies it (the one the canary passed, not one built again)."""

    def stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
        return processor(ds).map_batches(normalise_engine_errors, num_cpus=LIGHT_CPUS)

    return stage


def vllm_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    """Steps 2-5 and 7 for a caller without `before_rows`: the GPUs waited for, Ray's
    processor built, applied to the dataset with our error column."""
    check_gpus(cfg)
    return checked_stage(build_vllm_processor(cfg, opts))(ds, cfg, opts)
