"""Model configs: one YAML file per model under configs/models/, validated by pydantic.

`--model` names, in this order of precedence: a config (file stem or YAML path); for the
`hf` and `vllm` engines a local checkpoint directory, then a hub id `ORG/NAME[@REVISION]`
(pipelines/engines/hub_model.py), whose config is built from the model's own files; for
baselines, any plain name. A model that is none of these is a usage error, and so is a
config of another kind of engine (`--engine random --model oracle` would store random
answers as the oracle's): a baseline's config goes with that baseline only, an API
model's with http, a weights model's with hf or vllm. A path ending in .yaml or .yml is
always read as a config. Config files are bounded in size, nesting and every number
(store/yaml_file.py, the fields' limits), and a name is a plain slug: it becomes a
results folder.

Sweep entries (`configs/models/*.yaml`) are the 45+ real models; `configs/models/local/`
holds CPU-runnable entries (baselines, tiny random models) that carry `local: true` and are
kept out of that count.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from actors.http_reply import DEFAULT_DEADLINE_S
from geometry.item import IMAGE_SETUPS, SETUPS
from pipelines.cli_args import name_text
from pipelines.engines import checkpoint_files
from pipelines.engines.hub_model import HubError, HubId, download, fetch_config, parse_hub_id
from pipelines.engines.hub_model import resolve_commit as resolve_hub_commit
from pipelines.engines.local_builds import MissingBuildError, local_repo
from pipelines.suggest import did_you_mean
from store.yaml_file import YAMLBoundError, load_bounded

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "models"
# The engine table: every NoReGeo engine and its kind. `model` engines run a model from
# weights (a checkpoint or hub repo; the pre-flight checks load its tokenizer and config),
# `api` engines call a server, `baseline` engines answer without a model. Every other list
# of engines is derived from this one (stages.STAGES maps each name to its Ray stage).
ENGINE_KINDS: dict[str, Literal["model", "api", "baseline"]] = {
    "vllm": "model",
    "hf": "model",
    "http": "api",
    "oracle": "baseline",
    "random": "baseline",
    "constant": "baseline",
}
ENGINES = tuple(ENGINE_KINDS)
BASELINES = tuple(e for e, kind in ENGINE_KINDS.items() if kind == "baseline")
# Engines that load weights, so that --model may name a local checkpoint directory.
CHECKPOINT_ENGINES = tuple(e for e, kind in ENGINE_KINDS.items() if kind == "model")
# pydantic needs the names spelled out; tests/pipelines/test_model_configs.py checks that
# they are the table's.
Engine = Literal["vllm", "hf", "http", "oracle", "random", "constant"]
Modality = Literal["text", "image-text"]
SetupName = Literal["text", "dotted", "full"]
TinyKind = Literal["llm", "vlm"]
# Where a model's weights come from: pretrained (`real`), a random initialisation (`random`:
# the tiny test models, whose answers are noise by design), or no weights at all (`none`:
# the answer baselines). The report marks the random-weight rows.
Weights = Literal["real", "random", "none"]
# The file a checkpoint folder built here names its weights in (`real-model`, `tiny-model`).
PROVENANCE_FILE = "provenance.json"
# vLLM's two chat-template content formats (ChatTemplateContentFormat), as Ray 2.60's
# prepare-multimodal stage takes them.
ContentFormat = Literal["string", "openai"]
# Revisions that name no hub commit: a local checkpoint, the default branch, a baseline.
UNPINNED_REVISIONS = ("local", "main", "none")

# vLLM reasoning parsers a config may name, each with the text that ends the reasoning in
# the detokenized output (what is cut off before scoring). Names present in vLLM 0.29 (the
# release both the GPU and the CPU test profile run); tests/vllm checks them against vLLM's
# own registry.
REASONING_END: dict[str, str] = {
    "deepseek_r1": "</think>",
    "deepseek_v3": "</think>",
    "ernie45": "</think>",
    "glm45": "</think>",
    "mistral": "[/THINK]",
    "qwen3": "</think>",
    "seed_oss": "</seed:think>",
    "step3": "</think>",
}
REASONING_PARSERS = tuple(REASONING_END)


# A grammar-constrained JSON answer: {"answer": ...} or {"x": .., "y": ..}.
OUTPUT_TOKENS_PER_ROW = 16
# Upper bounds of a config's numbers (issue 38: `max_model_len: 1e26` loaded and hf
# started), each far above any real model: contexts and budgets in tokens, GPUs per engine,
# images per prompt, parameters in billions, a sampling temperature.
MAX_TOKENS = 2**24
MAX_GPUS = 1024
MAX_IMAGES = 1024
MAX_PARAMS_B = 100_000.0
MAX_TEMPERATURE = 100.0
# A name becomes a folder name (model=<slug>): letters, digits, `._+-` and at most one `/`
# between two parts (a hub id's ORG/NAME), never `.` or `..` as a part, nor a leading `-`.
MAX_NAME_CHARS = 128
NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9._+-]*(/[A-Za-z0-9_][A-Za-z0-9._+-]*)?"


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
        "download, pipelines/engines/hub_model.py); the engines load the model from it.",
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
        "transformers for its fix (pipelines.engines.vllm_config.tokenizer_source).",
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

    @model_validator(mode="after")
    def _consistent(self) -> ModelConfig:
        """Combinations that cannot run are errors at load time, not hours into a sweep."""
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


def load_config(path: Path) -> ModelConfig:
    """One config file, validated; a bad file is a ModelConfigError naming path and field."""
    try:
        data = load_bounded(path)
        return ModelConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ModelConfigError(f"{path}: field {field}: {first['msg']}") from err
    except (OSError, yaml.YAMLError, YAMLBoundError) as err:
        raise ModelConfigError(f"{path}: {err}") from err
    except UnicodeDecodeError as err:
        raise ModelConfigError(f"{path} is not UTF-8 text (byte {err.start})") from err


def load_configs(folder: Path) -> list[ModelConfig]:
    """Every `*.yaml` under `folder` (recursively), sorted by name.

    The file stem must equal `name` and names must be unique, so `--only NAME` and result
    directories can never point at two models.
    """
    if not folder.is_dir():
        raise ModelConfigError(f"{folder} is not a directory of model configs")
    configs: dict[str, tuple[Path, ModelConfig]] = {}
    for path in sorted(folder.rglob("*.y*ml")):
        cfg = load_config(path)
        if cfg.name != path.stem:
            raise ModelConfigError(f"{path}: field name: {cfg.name!r} differs from the file stem")
        if cfg.name in configs:
            raise ModelConfigError(
                f"{path}: field name: {cfg.name!r} also in {configs[cfg.name][0]}"
            )
        configs[cfg.name] = (path, cfg)
    if not configs:
        raise ModelConfigError(f"{folder} holds no *.yaml model configs")
    return [configs[name][1] for name in sorted(configs)]


def api_model(cfg: ModelConfig) -> str:
    """The model name an API engine sends: the snapshot the config records as its revision
    (`gpt-4.1-2025-04-14`), so the results are of the model the record names, not of
    whatever the alias (`gpt-4.1`) points to that day; the repo when no revision is pinned."""
    return cfg.repo if cfg.revision in UNPINNED_REVISIONS else cfg.revision


def hub_revision(revision: str) -> str | None:
    """The hub revision to pin, or None where there is none (local, main, baselines)."""
    return None if revision in UNPINNED_REVISIONS else revision


def checkpoint_weights(path: Path) -> Weights:
    """What a checkpoint folder's provenance file says of its weights; `real` without one
    (a checkpoint from elsewhere is pretrained unless it says otherwise)."""
    try:
        record = json.loads((path / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "real"
    value = record.get("weights") if isinstance(record, dict) else None
    return value if value in ("real", "random") else "real"


def checkpoint_config(
    engine: str,
    name: str,
    repo: str,
    revision: str,
    config: dict[str, Any],
    trust_remote_code: bool,
    snapshot: Path | None = None,
) -> ModelConfig:
    """The config of a checkpoint given by its files (`config.json` read as `config`): the
    local folder `repo`, or a hub id's `snapshot` folder (with `repo` the id)."""
    modality = checkpoint_files.modality(config)
    positions = checkpoint_files.context_length(config)
    # The checkpoint's own context (a GeoBuild conversation outgrows the 4096 default).
    context = {"max_model_len": positions} if positions else {}
    return ModelConfig(
        name=name,
        repo=repo,
        revision=revision,
        engine=engine,
        modality=modality,
        local=True,
        setups=list(SETUPS) if modality == "image-text" else ["text"],
        trust_remote_code=trust_remote_code,
        weights=checkpoint_weights(snapshot or Path(repo)),
        snapshot=None if snapshot is None else str(snapshot),
        **context,
    )


def _read_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelConfigError(f"{folder / 'config.json'} cannot be read ({err})") from err
    if not isinstance(config, dict):
        raise ModelConfigError(f"{folder / 'config.json'} is not a JSON object")
    return config


def hub_config(
    engine: str, hub_id: HubId, revision: str | None, trust_remote_code: bool
) -> ModelConfig:
    """The config of a hub id, built from its files at the commit its revision points to
    now; the snapshot is downloaded only once the remote-code check has passed."""
    if hub_id.revision and revision and hub_id.revision != revision:
        raise ModelConfigError(
            f"--model {hub_id} and --revision {revision} name two revisions; give one"
        )
    wanted = HubId(hub_id.repo, hub_id.revision or revision)
    try:
        commit = resolve_hub_commit(wanted)
        config = fetch_config(wanted, commit)
        if checkpoint_files.needs_remote_code(config) and not trust_remote_code:
            raise ModelConfigError(
                f"--model {wanted}: its config.json maps model_type "
                f"{config.get('model_type')!r}, which transformers lacks, to the repo's own "
                f"code (auto_map); add --trust-remote-code if you trust that code"
            )
        folder = download(wanted, commit)
    except HubError as err:
        raise ModelConfigError(f"--model {err}") from err
    return checkpoint_config(
        engine, wanted.repo, wanted.repo, commit.commit, config, trust_remote_code, folder
    )


def config_engine(model: str) -> str:
    """The engine the model config `model` names, for a command given no `--engine`
    (lm-eval's habit: the model says how it runs); ModelConfigError when `model` is no
    config."""
    named = _config_named(model)
    if named is None:
        raise ModelConfigError(
            f"--engine is required: --model {model} is not a model config, which would name "
            f"its engine (`--help` lists the engines)"
        )
    return named[1].engine


def resolve_model(
    engine: str, model: str, revision: str | None = None, trust_remote_code: bool = False
) -> ModelConfig:
    """The config `--engine ENGINE --model MODEL` refers to (precedence: module docstring).

    `trust_remote_code` (`--trust-remote-code`) applies to a model given by its files (a
    checkpoint folder, a hub id); a config says so in its YAML."""
    try:
        return _resolve_model(engine, model, revision, trust_remote_code)
    except ValidationError as err:  # a config built from --model: its name, mostly
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ModelConfigError(f"--model {model}: field {field}: {first['msg']}") from err


def _resolve_model(
    engine: str, model: str, revision: str | None, trust_remote_code: bool
) -> ModelConfig:
    if engine not in ENGINES:
        raise ModelConfigError(
            f"unknown engine {engine!r}{did_you_mean(engine, ENGINES)}; valid: {', '.join(ENGINES)}"
        )
    if engine in BASELINES:
        named = _config_named(model)
        if named is not None:
            _check_pairing(engine, model, named)
        return ModelConfig(
            name=model if named is None else named[1].name,
            repo=model,
            revision=revision or "none",
            engine=engine,
            modality="image-text",
            setups=list(SETUPS),
            weights="none",
        )
    named = _config_named(model)
    if named is not None:
        path, cfg = named
        _check_pairing(engine, model, named)
        if trust_remote_code:
            raise ModelConfigError(
                f"--trust-remote-code applies to a checkpoint folder or hub id; the model "
                f"config {path} sets trust_remote_code in its YAML"
            )
        update: dict[str, Any] = {"engine": engine, "revision": revision or cfg.revision}
        if cfg.repo_env:  # a local build: the variable's folder, else the checkout's
            try:
                update["repo"] = local_repo(cfg.name, cfg.repo, cfg.repo_env, cfg.build_tiny)
            except MissingBuildError as err:
                raise ModelConfigError(str(err)) from err
        return cfg.model_copy(update=update)
    local = Path(model)
    if engine in CHECKPOINT_ENGINES and (local / "config.json").is_file():
        return checkpoint_config(
            engine,
            local.name,
            str(local.resolve()),
            revision or "local",
            _read_config(local),
            trust_remote_code,
        )
    hub_id = parse_hub_id(model) if engine in CHECKPOINT_ENGINES else None
    if hub_id is not None and not local.exists():
        return hub_config(engine, hub_id, revision, trust_remote_code)
    names = [p.stem for p in (*CONFIG_DIR.glob("*.yaml"), *(CONFIG_DIR / "local").glob("*.yaml"))]
    raise ModelConfigError(
        f"unknown model config {model!r}{did_you_mean(model, names)}: not a file in "
        f"{CONFIG_DIR}, not a YAML path"
        + (
            ", not a local checkpoint directory, not a hub id ORG/NAME[@REVISION]"
            if engine in CHECKPOINT_ENGINES
            else ""
        )
    )


def _config_named(model: str) -> tuple[Path, ModelConfig] | None:
    """The config `--model` names (a YAML path, or a name in CONFIG_DIR or its local/),
    loaded; None when it names none. A path ending in .yaml or .yml must be a config:
    taken as a plain name it would label results with a path (issue 38)."""
    if model.lower().endswith((".yaml", ".yml")):
        if not Path(model).is_file():
            raise ModelConfigError(f"--model {model}: no such config file")
        return Path(model), load_config(Path(model))
    for path in (CONFIG_DIR / f"{model}.yaml", CONFIG_DIR / "local" / f"{model}.yaml"):
        if path.is_file():
            return path, load_config(path)
    return None


def _check_pairing(engine: str, model: str, named: tuple[Path, ModelConfig]) -> None:
    """`--engine` and the config `--model` names agree: a baseline's config only with that
    baseline, an API model's only with http, a weights model's only with hf or vllm. Else
    one would store (say) random answers under the name `oracle` (issue 38)."""
    path, cfg = named
    own = cfg.engine
    if own == engine or (own not in BASELINES and ENGINE_KINDS[own] == ENGINE_KINDS[engine]):
        return
    kind = ENGINE_KINDS[own]
    fits = " or ".join(f"--engine {e}" for e, k in ENGINE_KINDS.items() if k == kind)
    if own in BASELINES:
        fits = f"--engine {own}"
    if engine in BASELINES:
        other = "or a name of your own for the baseline's results"
    elif engine == "http":
        other = "or the config of an API model"
    else:
        other = "or a checkpoint folder, config or hub id for this engine"
    raise ModelConfigError(
        f"--engine {engine} and --model {model} disagree: {path} is the {own} engine's "
        f"{'baseline' if own in BASELINES else 'model'}; give {fits}, {other}"
    )


def add_model_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """`--model`, `--revision` and `--trust-remote-code`, with resolve_model's precedence."""
    parser.add_argument(
        "--model",
        required=True,
        type=name_text,
        help=f"{what}. Precedence: a config name or YAML path, then (hf, vllm) an existing "
        "local folder, then a hub id ORG/NAME[@REVISION], resolved to a commit on the hub "
        "(HF_ENDPOINT) and downloaded to the Hugging Face cache (HF_HOME)",
    )
    parser.add_argument(
        "--revision",
        default=None,
        type=name_text,
        help="hub revision (branch, tag or commit); default: the config's, or for a hub id "
        "its @REVISION, else main",
    )
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run a checkpoint folder's or hub id's own modelling code (auto_map); a model "
        "config sets trust_remote_code in its YAML",
    )
