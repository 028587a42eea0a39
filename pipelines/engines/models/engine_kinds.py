"""The engine table: every NoReGeo engine and its kind."""

from __future__ import annotations

from typing import Literal

# `model` engines run a model from weights (a checkpoint or hub repo; the pre-flight checks
# load its tokenizer and config), `api` engines call a server, `baseline` engines answer
# without a model. Every other list of engines is derived from this one (stages.STAGES maps
# each name to its Ray stage).
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
# pydantic needs the names spelled out; tests/pipelines/engines/models/test_model_configs.py checks
# that they are the table's.
Engine = Literal["vllm", "hf", "http", "oracle", "random", "constant"]
