"""The model config schema: one pydantic model per model, validated field by field and as a
whole when a config is loaded or built, so a combination that cannot run is refused at load
time (pipelines/engines/models/config_yaml.py reads the files, model_resolution.py `--model`)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actors.http_reply import DEFAULT_DEADLINE_S
from geometry.item import IMAGE_SETUPS
from pipelines.engines.models.engine_kinds import BASELINES, Engine
from pipelines.engines.models.llava_conversations import CONVERSATIONS
from pipelines.engines.models.model_fields import (
    MAX_GPUS,
    MAX_IMAGES,
    MAX_NAME_CHARS,
    MAX_PARAMS_B,
    MAX_TEMPERATURE,
    MAX_TOKENS,
    NAME_PATTERN,
    OUTPUT_TOKENS_PER_ROW,
    REASONING_END,
    REASONING_PARSERS,
    ContentFormat,
    Layout,
    Modality,
    SetupName,
    TinyKind,
    Weights,
)


class AuthorSampling(BaseModel):
    """Sampling parameters a model's authors require; None leaves the run's (or vLLM's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    temperature: float | None = Field(None, ge=0.0, le=MAX_TEMPERATURE, allow_inf_nan=False)
    top_p: float | None = Field(None, gt=0.0, le=1.0, allow_inf_nan=False)
    top_k: int | None = Field(None, ge=1, le=MAX_TOKENS)
    min_p: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)


def _text_only() -> list[SetupName]:
    return ["text"]


class ModelConfigError(ValueError):
    """A model config file that does not validate; the message names the file and field."""


class ModelConfig(BaseModel):
    """One model of a sweep, or of a single `evaluate` run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        description="Short unique name; results go under model=<slug of name>. Letters, "
        "digits and . _ + - (not first), at most one `/` (a hub id's ORG/NAME).",
    )
    repo: str = Field(description="Hugging Face repo id, local path, or API model name.")
    revision: str = Field("main", description="Hub revision (commit or tag) the results refer to.")
    engine: Engine = Field("vllm", description="Default engine for this model.")
    modality: Modality = Field("text", description="text, or image-text for VLMs.")
    setups: list[SetupName] = Field(
        default_factory=_text_only, description="NoReGeo setups this model runs."
    )
    tensor_parallel_size: int = Field(
        1, ge=1, le=MAX_GPUS, description="GPUs per engine (vLLM TP degree)."
    )
    max_model_len: int = Field(
        4096, ge=256, le=MAX_TOKENS, description="Context length given to the engine."
    )
    dtype: str = Field("auto", description="Weights dtype: auto, bfloat16, float16, float32.")
    trust_remote_code: bool = Field(False, description="Run the repo's own modelling code.")
    max_images: int = Field(
        1, ge=0, le=MAX_IMAGES, description="Images per prompt the engine must accept."
    )
    api_base: str | None = Field(None, description="Base URL of an OpenAI-compatible API.")
    api_key_env: str | None = Field(None, description="Env variable holding the API key.")
    api_constraint: Literal["json_schema", "grammar"] = Field(
        "json_schema",
        description="How the http engine bounds answers: json_schema (response_format; "
        "OpenAI's API) or grammar (the row's bounded EBNF as vLLM's structured_outputs; "
        "vLLM servers, whose JSON-schema mode lets weak models write whitespace forever).",
    )
    api_deadline_s: float = Field(
        DEFAULT_DEADLINE_S,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="http engine: seconds one row may take over all its attempts and waits "
        "(a server that trickles bytes or hangs loses that row, as a transient error).",
    )
    chat_template_notes: str = Field("", description="Anything special about its chat template.")
    chat_template_content_format: ContentFormat | None = Field(
        None,
        description="How message content reaches the chat template (vLLM's "
        "chat_template_content_format): openai, a list of typed parts where the template "
        "writes each image's placeholder (llava-hf, Idefics3, SmolVLM, Qwen2-VL, Gemma 3, "
        "InternVL3-2B); string, one string with the model's placeholder already in the text "
        "(templates that print content as it comes, e.g. Molmo-7B-D's). None: "
        "openai. Text models always send string content. The real templates' "
        "detected format is checked in tests/vllm/test_chat_templates.py.",
    )
    system_prompt_as_string: bool = Field(
        False,
        description="Image-text models with openai content: the system message reaches the "
        "chat template as one string (its text parts joined by newlines; Ray's "
        "apply_sys_msg_formatting), for templates that print `messages[0]['content']` as a "
        "string (Llama 3.2 Vision), which would write a list of parts as its Python repr. "
        "False: the system message is a list of parts like the others, for templates that "
        "loop over every message's parts (Idefics3, SmolVLM). Checked against the real "
        "templates in tests/vllm/test_chat_templates.py.",
    )
    verified: bool = Field(
        True,
        description="False when the repo id is a guess; true means known to the author, not "
        "checked online (no hub access where configs are written).",
    )
    paper: bool = Field(False, description="True for the models the NoReGeo paper evaluated.")
    local: bool = Field(
        False,
        description="CPU-runnable entry (baseline, tiny model, a checkpoint folder or hub id "
        "given as --model); not a sweep model.",
    )
    snapshot: str | None = Field(
        None,
        description="Local folder holding repo at the commit `revision` (a hub id's "
        "download, pipelines/engines/models/hub_model.py); the engines load the model from it.",
    )
    params_b: float | None = Field(
        None,
        gt=0,
        le=MAX_PARAMS_B,
        allow_inf_nan=False,
        description="Parameters in billions, for the GPU-hour estimate (None: API).",
    )
    image_tokens: int = Field(
        256,
        ge=0,
        le=MAX_TOKENS,
        description="Prompt tokens one 448 px image costs this model (estimate only).",
    )
    engine_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra vLLM engine_kwargs this model needs (e.g. mm_processor_kwargs).",
    )
    fix_mistral_regex: bool = Field(
        False,
        description="The repo's HF tokenizer has the pre-tokenizer regex transformers warns "
        "about (Mistral Tekken tokenizers): every stage and the engine load a copy that asks "
        "transformers for its fix (pipelines.engines.stages.vllm_config.tokenizer_source).",
    )
    reasoning_parser: str | None = Field(
        None,
        description="vLLM reasoning parser of a thinking model (one of REASONING_PARSERS): "
        "the answer grammar then applies after the reasoning, not from the first token.",
    )
    enable_thinking: bool | None = Field(
        None,
        description="Chat-template kwarg enable_thinking (Qwen3); None: not passed.",
    )
    thinking_max_tokens: int = Field(
        0,
        ge=0,
        le=MAX_TOKENS,
        description="Thinking budget: tokens of reasoning vLLM allows (its per-request "
        "thinking_token_budget) before it forces the end of reasoning, on top of the answer's "
        "max_tokens.",
    )
    sampling: AuthorSampling | None = Field(
        None,
        description="Sampling the model's authors require (e.g. Qwen3 thinking mode); it "
        "replaces the run's temperature for this model and is recorded as the run's sampling.",
    )
    expected_output_tokens: int = Field(
        OUTPUT_TOKENS_PER_ROW,
        ge=1,
        le=MAX_TOKENS,
        description="Output tokens a row is expected to cost, for the sweep's cost estimate "
        "(a reasoning model: its thinking budget plus the answer).",
    )
    blocked: str | None = Field(
        None,
        description="Why no engine of ours can run this model yet; the sweep lists it as not "
        "run with this reason instead of failing.",
    )
    repo_env: str | None = Field(
        None, description="Env variable that, when set, replaces repo (e.g. a local checkpoint)."
    )
    build_tiny: TinyKind | None = Field(
        None,
        description="Tiny random model the sweep builds offline when repo_env is unset "
        "(local test entries only).",
    )
    layout: Layout = Field(
        "hf",
        description="Checkpoint layout: hf (what transformers and vLLM load), or "
        "llava-original (haotian-liu/LLaVA's LlavaLlamaForCausalLM, converted once to "
        "llava-hf before a run: pipelines/engines/models/llava_convert.py).",
    )
    conversation: str | None = Field(
        None,
        description="llava-original: the LLaVA conversation template the converted "
        "checkpoint's chat template renders (vicuna_v1, llava_v1, dpsk); None: dpsk for a "
        "DeepSeek tokenizer, else vicuna_v1.",
    )
    vision_tower: str | None = Field(
        None,
        description="llava-original: the CLIP tower's hub id or folder; None: the "
        "checkpoint's own mm_vision_tower.",
    )
    vision_tower_revision: str | None = Field(
        None,
        description="llava-original: hub revision (commit) of the vision tower; None: its "
        "default branch.",
    )
    weights: Weights = Field(
        "real",
        description="real (pretrained), random (tiny test models: answers are noise) or "
        "none (answer baselines).",
    )

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if len(value) > MAX_NAME_CHARS or not re.fullmatch(NAME_PATTERN, value):
            raise ValueError(
                f"{value[:40]!r} is not a plain name: the name becomes a results folder, so "
                f"at most {MAX_NAME_CHARS} letters, digits and . _ + - (not first), and at "
                f"most one '/' (ORG/NAME)"
            )
        return value

    @field_validator("reasoning_parser")
    @classmethod
    def _known_parser(cls, value: str | None) -> str | None:
        if value is not None and value not in REASONING_END:
            raise ValueError(
                f"unknown vLLM reasoning parser {value!r}; known: {', '.join(REASONING_PARSERS)}"
            )
        return value

    @field_validator("conversation")
    @classmethod
    def _known_conversation(cls, value: str | None) -> str | None:
        if value is not None and value not in CONVERSATIONS:
            raise ValueError(
                f"unknown LLaVA conversation {value!r}; known: {', '.join(CONVERSATIONS)}"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ModelConfig:
        """Combinations that cannot run are errors at load time, not hours into a sweep."""
        if self.layout != "llava-original" and (
            self.conversation or self.vision_tower or self.vision_tower_revision
        ):
            raise ValueError(
                "layout: conversation, vision_tower and vision_tower_revision apply to "
                "layout: llava-original only"
            )
        if self.modality == "text" and any(s in IMAGE_SETUPS for s in self.setups):
            raise ValueError("setups: a text-only model can only run the text setup")
        if not self.setups:
            raise ValueError("setups: at least one setup is needed")
        if self.engine == "http" and not (self.api_base and self.api_key_env):
            raise ValueError("api_base: the http engine needs api_base and api_key_env")
        if self.build_tiny and not self.local:
            raise ValueError("build_tiny: only local test entries may build tiny models")
        if self.build_tiny and self.weights != "random":
            raise ValueError("weights: a tiny model built here has random weights")
        if (self.engine in BASELINES) != (self.weights == "none"):
            raise ValueError("weights: none exactly for the answer baselines (no model)")
        if self.engine_kwargs.get("tokenizer_mode") == "mistral":
            raise ValueError(
                "engine_kwargs.tokenizer_mode: mistral would not govern the prompt (Ray's "
                "chat-template and tokenize stages use the HF tokenizer); use the HF "
                "tokenizer, with fix_mistral_regex: true for a Tekken tokenizer"
            )
        if self.reasoning_parser and not self.thinking_max_tokens:
            raise ValueError(
                "thinking_max_tokens: a reasoning model needs a token budget for its "
                "reasoning (e.g. 4096)"
            )
        if self.paper and self.thinks:
            # The paper asks for one-shot answers "without any chain-of-thought" and marks a
            # reasoning trail as incorrect: a thinking row is not the paper's row.
            raise ValueError(
                "paper: a paper model answers one-shot as the paper ran it, but this config "
                "thinks (reasoning_parser, enable_thinking or thinking_max_tokens); turn "
                f"thinking off, or name it e.g. {self.name}-thinking with paper: false"
            )
        return self

    @property
    def thinks(self) -> bool:
        """Whether the model reasons before its answer (a reasoning parser, a thinking
        budget or its template's thinking switch on), so that the grammar is not applied
        from the first token."""
        return bool(self.reasoning_parser or self.thinking_max_tokens or self.enable_thinking)

    @property
    def content_format(self) -> ContentFormat:
        """The chat-template content format every engine of ours renders image-text
        content with (text models always send string content: `build_messages`).

        Ray 2.60's prepare-multimodal stage defaults to "string", which empties the prompt
        of every template that loops over a list of parts (llava-1.5 renders
        `USER: ASSISTANT:`): the default here is "openai".
        """
        return self.chat_template_content_format or "openai"

    @property
    def source(self) -> str:
        """Where the engines load the model from: a hub id's snapshot folder, else repo."""
        return self.snapshot or self.repo

    @property
    def gpus(self) -> int:
        """GPUs one engine replica of this model needs (0: runs on CPU or remotely)."""
        if self.engine in ("vllm", "hf") and not self.local:
            return self.tensor_parallel_size
        return 0

    def check_setups(self, setups: list[str]) -> None:
        """Image setups asked of a text-only model are a usage error."""
        if self.modality == "text":
            asked = [s for s in setups if s in IMAGE_SETUPS]
            if asked:
                raise ModelConfigError(
                    f"model {self.name} is text-only; setups {','.join(asked)} need an "
                    f"image-text model (run with --setups text)"
                )
