"""Placement groups of tensor-parallel engines: one node each, none left behind.

For tensor_parallel_size > 1, Ray 2.60's vLLM engine stage places each engine replica in a
placement group it creates (`_ray_scheduling_strategy_fn` in ray/llm/_internal/batch/
stages/vllm_engine_stage.py, handed to Ray Data as `ray_remote_args_fn`, which Ray Data
calls on the driver for every engine actor it starts). Nothing in ray/data or ray/llm at
2.60.0 removes those groups (ray-project/ray#64035: the next pipeline hangs with its group
PENDING), so in a sweep every TP>1 model kept its GPUs reserved until the driver exited;
and their soft PACK let one engine straddle two nodes.

Here the stage's function is swapped for one that builds the same bundles with
STRICT_PACK (one node per engine) and records each group, and `removed_when_done` removes
the groups made inside it when the model's dataset ends, however it ends.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

# One engine's GPUs on one node: NVLink between its tensor-parallel ranks, and no group
# that a node's loss splits.
STRATEGY = "STRICT_PACK"

_lock = threading.Lock()
_made: list[Any] = []  # every group made by strict_pack_strategy in this process


def strict_pack_strategy(
    bundles_per_replica: int,
    accelerator_type: str | None = None,
    placement_group_config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The scheduling strategy of one engine replica (Ray's function's arguments and
    bundles, STRICT_PACK instead of PACK); the group is recorded for removal."""
    import ray
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    if placement_group_config:
        bundles = copy.deepcopy(placement_group_config["bundles"])
    else:
        bundles = [{"GPU": 1, "CPU": 1} for _ in range(bundles_per_replica)]
    if accelerator_type:
        for bundle in bundles:
            bundle[f"accelerator_type:{accelerator_type}"] = 0.001
    group = ray.util.placement_group(bundles, strategy=STRATEGY)
    with _lock:
        _made.append(group)
    return {
        "scheduling_strategy": PlacementGroupSchedulingStrategy(
            group, placement_group_capture_child_tasks=True
        )
    }


def made_count() -> int:
    """Groups made so far in this process (a mark for `remove_made_since`)."""
    with _lock:
        return len(_made)


def remove_made_since(mark: int) -> int:
    """Remove every group made since `mark` that is still there; how many were removed."""
    import ray

    with _lock:
        groups = _made[mark:]
        del _made[mark:]
    for group in groups:
        try:
            ray.util.remove_placement_group(group)
        except Exception:  # noqa: BLE001 (already removed, or Ray is gone: nothing to free)
            continue
    return len(groups)


@contextmanager
def removed_when_done() -> Iterator[None]:
    """Groups the engines make inside this block are removed when it ends (finished,
    failed or interrupted): the next model finds its GPUs free."""
    mark = made_count()
    try:
        yield
    finally:
        remove_made_since(mark)


def use_strict_pack(engine_stage: Any) -> None:
    """Swap the vLLM engine stage's placement-group function (TP/PP > 1; the stage has none
    otherwise) for `strict_pack_strategy` with the same arguments."""
    kwargs = engine_stage.map_batches_kwargs
    make = kwargs.get("ray_remote_args_fn")
    if make is None:
        return
    if not isinstance(make, partial):
        raise TypeError(
            f"Ray's vLLM engine stage gave an unexpected ray_remote_args_fn ({make!r}); "
            "its placement groups could not be made removable"
        )
    kwargs["ray_remote_args_fn"] = partial(strict_pack_strategy, *make.args, **make.keywords)
