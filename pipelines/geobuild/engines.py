"""Engines for GeoBuild: the model engines of `pipelines.engines.stages.engine_stages`, and
GeoBuild-only ones.

NoReGeo's answer baselines (oracle, random, constant) have no meaningful GeoBuild program
and are refused. GeoBuild-only engines (`programs`: scripted replies; the solver baseline
joins here) are registered in GEOBUILD_ENGINES.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.engines.models.model_schema import ModelConfig, ModelConfigError
from pipelines.engines.stages.engine_stages import STAGES, MissingKeyError, api_key
from pipelines.engines.stages.options import EngineOptions
from pipelines.terminal.suggest import did_you_mean
from store.errors import UsageError

StageBuilder = Callable[[Any, ModelConfig, EngineOptions], Any]


@dataclass(frozen=True)
class Engine:
    """A resolved engine: the model's config and the stage that asks it."""

    cfg: ModelConfig
    stage: StageBuilder


def _programs_config(model: str, revision: str | None) -> ModelConfig:
    from actors.program_replay import load_script

    path = Path(model)
    if not path.is_file():
        raise UsageError(f"--model {model}: the programs engine needs a JSONL file of replies")
    try:
        load_script(path)
    except UnicodeDecodeError as err:
        raise UsageError(f"--model {model} is not UTF-8 text (byte {err.start})") from err
    except ValueError as err:
        raise UsageError(str(err)) from err
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    # Built without validation: `programs` is not a ModelConfig engine; GeoBuild-only
    # engines live in this module. Scripted replies may answer any message, images included.
    fields: dict[str, Any] = {
        "name": path.stem,
        "repo": str(path.resolve()),
        "revision": revision or digest,
        "engine": "programs",
        "modality": "image-text",
        "weights": "none",  # scripted replies: no model (the report said "real", issue 39)
    }
    return ModelConfig.model_construct(**fields)


def _programs_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    import ray

    from actors.program_replay import ProgramReplay

    return ds.map_batches(
        ProgramReplay,
        fn_constructor_kwargs={"path": cfg.repo},
        batch_size=opts.batch_size,
        compute=ray.data.ActorPoolStrategy(size=1),
        num_cpus=0.25,
    )


def _solver_config(model: str, revision: str | None) -> ModelConfig:
    """`--engine solver --model DATASET`: the solver reads the problems it answers.
    `--model RESULTS` (a `geobuild-solve --out RESULTS` root): it replies with the audit's
    persisted programs instead of solving again; the revision names the audit's journal, so
    a results folder never mixes replies of two audits."""
    from store.solver_audit import JOURNAL, find_audit

    path = Path(model)
    if not path.exists():
        raise UsageError(
            f"--model {model}: the solver engine needs the data set path or a geobuild-solve "
            "results root"
        )
    audit = find_audit(path)
    default = "solver"
    if audit is not None:
        default = "audit-" + hashlib.sha256((audit / JOURNAL).read_bytes()).hexdigest()[:16]
    fields: dict[str, Any] = {
        "name": "solver",
        "repo": str(path.resolve()),
        "revision": revision or default,
        "engine": "solver",
        "modality": "text",
        "weights": "none",  # a rule-based solver: no model (the report said "real", issue 39)
    }
    return ModelConfig.model_construct(**fields)


def _solver_stage(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
    import ray

    from actors.solver_engine import SolverEngine

    return ds.map_batches(
        SolverEngine,
        fn_constructor_kwargs={"dataset": cfg.repo},
        batch_size=opts.batch_size,
        compute=ray.data.ActorPoolStrategy(size=opts.pool_size),
        num_cpus=0.5,
    )


# GeoBuild-only engines: name -> (resolve --model/--revision to a config, stage builder).
GEOBUILD_ENGINES: dict[str, tuple[Callable[[str, str | None], ModelConfig], StageBuilder]] = {
    "programs": (_programs_config, _programs_stage),
    "solver": (_solver_config, _solver_stage),
}


def valid_engines() -> list[str]:
    """Engines that can answer GeoBuild: model engines and the GeoBuild-only ones."""
    return [e for e in STAGES if e not in BASELINES] + list(GEOBUILD_ENGINES)


def model_stage(engine: str) -> StageBuilder:
    """The stage of a model engine for a multi-round run. vLLM's and hf's engines are kept
    across rounds (`ResidentVLLM`, `ResidentHF`): rebuilt per round, they would reload the
    weights every round; their hosts come back on another node when theirs is lost."""
    if engine == "vllm":
        from pipelines.engines.stages.vllm_resident import ResidentVLLM

        return ResidentVLLM()
    if engine == "hf":
        from pipelines.engines.stages.hf_resident import ResidentHF

        return ResidentHF()
    return STAGES[engine]


def close_stage(stage: StageBuilder) -> None:
    """Ends what a stage keeps between rounds (vLLM's engine hosts); others keep nothing."""
    close = getattr(stage, "close", None)
    if close is not None:
        close()


def resolve_engine(
    engine: str, model: str, revision: str | None, trust_remote_code: bool = False
) -> Engine:
    """`--engine`/`--model` as an Engine; UsageError for baselines and unknown names."""
    valid = ", ".join(valid_engines())
    if engine in BASELINES:
        raise UsageError(
            f"--engine {engine} is a NoReGeo answer baseline with no meaningful GeoBuild "
            f"program; engines for geobuild: {valid}"
        )
    if engine in GEOBUILD_ENGINES:
        resolve, stage = GEOBUILD_ENGINES[engine]
        return Engine(resolve(model, revision), stage)
    if engine not in STAGES:
        hint = did_you_mean(engine, valid_engines())
        raise UsageError(f"unknown engine {engine!r}{hint}; engines for geobuild: {valid}")
    try:
        cfg = resolve_model(engine, model, revision, trust_remote_code)
        if cfg.api_key_env:
            api_key(cfg)  # refused here, before Ray starts and anything is written
        return Engine(cfg, model_stage(engine))
    except (ModelConfigError, MissingKeyError) as err:
        raise UsageError(str(err)) from err
