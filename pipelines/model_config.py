"""Model configs: one YAML file per model under configs/models/, validated by pydantic.

`--model` names a config (file stem or path), or, for the `hf` engine, a local checkpoint
directory, or, for baselines, any name. A model that is none of these is a usage error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from geometry.item import IMAGE_SETUPS, SETUPS

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "models"
ENGINES = ("vllm", "hf", "http", "oracle", "random", "constant")
BASELINES = ("oracle", "random", "constant")
Engine = Literal["vllm", "hf", "http", "oracle", "random", "constant"]
Modality = Literal["text", "image-text"]
SetupName = Literal["text", "dotted", "full"]


class ModelConfigError(ValueError):
    """A model config file that does not validate; the message names the file and field."""


class ModelConfig(BaseModel):
    """One model of a sweep, or of a single `evaluate` run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Short unique name; results go under model=<slug of name>.")
    repo: str = Field(description="Hugging Face repo id, local path, or API model name.")
    revision: str = Field("main", description="Hub revision (commit or tag) the results refer to.")
    engine: Engine = Field("vllm", description="Default engine for this model.")
    modality: Modality = Field("text", description="text, or image-text for VLMs.")
    setups: list[SetupName] = Field(
        default_factory=lambda: ["text"], description="NoReGeo setups this model runs."
    )
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per engine (vLLM TP degree).")
    max_model_len: int = Field(4096, ge=256, description="Context length given to the engine.")
    dtype: str = Field("auto", description="Weights dtype: auto, bfloat16, float16, float32.")
    trust_remote_code: bool = Field(False, description="Run the repo's own modelling code.")
    max_images: int = Field(1, ge=0, description="Images per prompt the engine must accept.")
    api_base: str | None = Field(None, description="Base URL of an OpenAI-compatible API.")
    api_key_env: str | None = Field(None, description="Env variable holding the API key.")
    chat_template_notes: str = Field("", description="Anything special about its chat template.")
    verified: bool = Field(True, description="False when the repo id could not be checked.")

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
    try:
        data = yaml.safe_load(path.read_text())
        return ModelConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ModelConfigError(f"{path}: field {field}: {first['msg']}") from err
    except (OSError, yaml.YAMLError) as err:
        raise ModelConfigError(f"{path}: {err}") from err


def _local_checkpoint_modality(path: Path) -> Modality:
    config = json.loads((path / "config.json").read_text())
    return "image-text" if "vision_config" in config else "text"


def resolve_model(engine: str, model: str, revision: str | None = None) -> ModelConfig:
    """The config `--engine ENGINE --model MODEL` refers to (see module docstring)."""
    if engine not in ENGINES:
        raise ModelConfigError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
    if engine in BASELINES:
        return ModelConfig(
            name=model,
            repo=model,
            revision=revision or "none",
            engine=engine,  # type: ignore[arg-type]
            modality="image-text",
            setups=list(SETUPS),
        )
    candidates = [Path(model), CONFIG_DIR / f"{model}.yaml"]
    for path in candidates:
        if path.is_file() and path.suffix in (".yaml", ".yml"):
            cfg = load_config(path)
            return cfg.model_copy(update={"engine": engine, "revision": revision or cfg.revision})
    local = Path(model)
    if engine == "hf" and (local / "config.json").is_file():
        modality = _local_checkpoint_modality(local)
        setups = list(SETUPS) if modality == "image-text" else ["text"]
        return ModelConfig(
            name=local.name,
            repo=str(local.resolve()),
            revision=revision or "local",
            engine="hf",
            modality=modality,
            setups=setups,  # type: ignore[arg-type]
        )
    raise ModelConfigError(
        f"unknown model config {model!r}: not a file in {CONFIG_DIR}, not a YAML path"
        + (", not a local checkpoint directory" if engine == "hf" else "")
    )
