"""CPU-vLLM tests (run in .venv-vllm by `make test-vllm`): one local Ray with a logical GPU.

vLLM's CPU build ignores the GPU; Ray's vLLM stage requests one per replica. Loading an
engine takes 60-90 s here, so each module loads as few as it can (module-scoped runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def vllm_ray() -> Iterator[Any]:
    import ray
    import torch

    torch.set_num_threads(1)
    if not ray.is_initialized():
        ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def few_items(vllm_ray: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 items per task, all 25 tasks and 3 setups, 128-px images."""
    from geometry.item import SETUPS
    from geometry.tasks.registry import all_tasks
    from pipelines.noregeo.generate import generate

    out = tmp_path_factory.mktemp("items")
    generate(out, list(all_tasks()), per_task=2, seed=0, setups=list(SETUPS), image_size=128)
    return out
