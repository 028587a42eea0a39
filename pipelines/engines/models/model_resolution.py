"""`--model` resolved to a model config, with `--engine`, `--revision` and
`--trust-remote-code`.

`--model` names, in this order of precedence: a config (file stem or YAML path); for the
`hf` and `vllm` engines a local checkpoint directory, then a hub id `ORG/NAME[@REVISION]`
(pipelines/engines/models/hub_model.py), whose config is built from the model's own files (an
original-layout LLaVA checkpoint, or a config with `layout: llava-original`, is converted to
llava-hf first: llava_convert.py); for
baselines, any plain name. A model that is none of these is a usage error, and so is a
config of another kind of engine (`--engine random --model oracle` would store random
answers as the oracle's): a baseline's config goes with that baseline only, an API
model's with http, a weights model's with hf or vllm. A path ending in .yaml or .yml is
always read as a config. A name is a plain slug (model_schema.py): it becomes a results
folder.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from geometry.item import SETUPS
from pipelines.command_line.args import name_text
from pipelines.engines.models.config_from_checkpoint import (
    checkpoint_config,
    hub_config,
    original_llava_config,
)
from pipelines.engines.models.config_yaml import CONFIG_DIR, load_config
from pipelines.engines.models.engine_kinds import (
    BASELINES,
    CHECKPOINT_ENGINES,
    ENGINE_KINDS,
    ENGINES,
)
from pipelines.engines.models.hub_model import parse_hub_id
from pipelines.engines.models.llava_convert import prepare
from pipelines.engines.models.llava_original import is_original_llava
from pipelines.engines.models.local_builds import MissingBuildError, local_repo
from pipelines.engines.models.model_schema import ModelConfig, ModelConfigError
from pipelines.terminal.suggest import did_you_mean


def _read_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelConfigError(f"{folder / 'config.json'} cannot be read ({err})") from err
    if not isinstance(config, dict):
        raise ModelConfigError(f"{folder / 'config.json'} is not a JSON object")
    return config


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
        return prepare(cfg.model_copy(update=update))
    local = Path(model)
    if engine in CHECKPOINT_ENGINES and (local / "config.json").is_file():
        config = _read_config(local)
        if is_original_llava(config):
            return original_llava_config(engine, local, revision or "local", trust_remote_code)
        return checkpoint_config(
            engine,
            local.name,
            str(local.resolve()),
            revision or "local",
            config,
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
