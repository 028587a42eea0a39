"""An API model's key from the sweep's driver to the model's Ray task, never in Ray's records.

A job's driver exports the secrets (scripts/sweep_submit.sh: from the secrets folder on
the head), but a task's worker starts from the raylet's environment, not the driver's, so
the task that runs `evaluate` for an http model would find no key. The driver puts the key
in the object store (as `http_stage` hands it to its actors) and the task gets the ObjectRef
inside a dict, so Ray keeps only its ID in the task spec; never as a value in the task's
arguments or runtime env, which Ray keeps in its records (task specs, runtime_env_agent.log).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from pipelines.engines.models.model_schema import ModelConfig

API_KEYS = "api_keys"  # the entry of the task's options that holds them


def key_refs(cfg: ModelConfig) -> dict[str, Any]:
    """The model's API key variable -> an ObjectRef of its value (nothing for a model that
    reads no key, or whose key this driver does not have: the plan lists it as not run)."""
    import ray

    from pipelines.engines.stages.engine_stages import api_key

    if not cfg.api_key_env or not os.environ.get(cfg.api_key_env):
        return {}
    return {cfg.api_key_env: ray.put(api_key(cfg).encode())}


@contextlib.contextmanager
def keys_in_environment(keys: dict[str, Any]) -> Iterator[None]:
    """The keys' values in this worker's environment while the model runs (a worker that
    has a variable already keeps its own), removed afterwards: the worker outlives the task."""
    import ray

    added = [name for name in keys if not os.environ.get(name)]
    for name in added:
        os.environ[name] = ray.get(keys[name]).decode()
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)
