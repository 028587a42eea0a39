"""Test-wide settings: one CPU thread per process, no network, repository paths."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
# The data beside the checkout (`../shared`); GEOSEE_SHARED names it where a checkout is not
# beside it (a git worktree elsewhere).
SHARED = Path(os.environ.get("GEOSEE_SHARED") or REPO.parent / "shared")


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance for the whole test session (2 CPUs, no dashboard)."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def small_items(ray_local, tmp_path_factory) -> Path:
    """20 items per task, all 25 tasks and 3 setups, 128-px images."""
    from geometry.item import SETUPS
    from geometry.tasks.registry import all_tasks
    from pipelines.noregeo.generate import generate

    out = tmp_path_factory.mktemp("items")
    generate(out, list(all_tasks()), per_task=20, seed=0, setups=list(SETUPS), image_size=128)
    return out


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama-style causal LM with a BPE tokenizer and chat template (seed 0)."""
    import torch

    from pipelines.engines.models.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model("llm", tmp_path_factory.mktemp("tiny_llm"), seed=0)


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llava-style image-text model (32 px images, 16 image tokens; seed 0)."""
    import torch

    from pipelines.engines.models.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model("vlm", tmp_path_factory.mktemp("tiny_vlm"), seed=0)


REAL_MODEL_ENV = "GEOSEE_REAL_MODEL"
REAL_MODEL_DEFAULT = REPO / "models" / "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def real_model_dir() -> Path:
    """SmolLM2-135M-Instruct, real weights, as `make real-model` builds it ($GEOSEE_REAL_MODEL,
    else models/smollm2-135m-instruct). Missing is a failure, not a skip: nothing is skipped
    on this machine."""
    from pipelines.engines.models.real_model import is_complete

    path = Path(os.environ.get(REAL_MODEL_ENV) or REAL_MODEL_DEFAULT)
    if not is_complete(path):
        pytest.fail(
            f"no complete real model at {path} (${REAL_MODEL_ENV} or the default); build it "
            f"with `make real-model` (or `geosee real-model --out {path}`)",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def tiny_thinking_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny LM as a reasoning model: `<think>`/`</think>` tokens, R1-style template."""
    import torch

    from pipelines.engines.models.tiny_model import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model("thinking", tmp_path_factory.mktemp("tiny_thinking"), seed=0)


VLLM_TESTS = REPO / "tests" / "vllm"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/vllm needs vLLM's CPU build, which lives in .venv-vllm (`make test-vllm`): it is
    collected only when named on the command line, never by a plain `pytest`."""
    if collection_path != VLLM_TESTS:
        return None
    named = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return not any(p == VLLM_TESTS or VLLM_TESTS in p.parents for p in named)
