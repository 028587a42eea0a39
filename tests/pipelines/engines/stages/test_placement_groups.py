"""No placement group outlives its model (pipelines/engines/stages/placement_groups.py).

Ray 2.60's vLLM engine stage makes a placement group per tensor-parallel engine replica and
never removes it (ray-project/ray#64035), so in a sweep of TP>1 models each kept its GPUs
until the driver exited and a later model waited forever. The scenario runs three TP=2
models one after another on 4 logical GPUs through Ray's real processor (its engine UDF
an instant stand-in) in a process of its own; on the old code the first model's group was
still CREATED after its rows were written (and the third model hung)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.engines.stages.placement_groups import (
    STRATEGY,
    strict_pack_strategy,
    use_strict_pack,
)
from tests.conftest import REPO
from tests.pipelines.tp_groups_scenario import MODELS


@pytest.mark.timeout(900)
def test_three_tensor_parallel_models_free_their_gpus_in_turn(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tests.pipelines.tp_groups_scenario", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=800,
    )  # fmt: skip
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{")]
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert [x["model"] for x in lines] == [f"tp2-{i}" for i in range(MODELS)]
    for line in lines:
        assert line["rows"] == 2, line
        assert line["held"] == [], f"{line['model']} left placement groups: {line['held']}"
        assert line["made"] == [STRATEGY], line  # one node per engine


def test_the_engine_stage_function_is_swapped_for_strict_pack() -> None:
    """Ray's stage hands a partial of its own function; ours takes its arguments."""
    from functools import partial

    class Stage:
        map_batches_kwargs = {"ray_remote_args_fn": partial(print, 4, "A100", None)}

    stage = Stage()
    use_strict_pack(stage)
    made = stage.map_batches_kwargs["ray_remote_args_fn"]
    assert made.func is strict_pack_strategy and made.args == (4, "A100", None)
    assert STRATEGY == "STRICT_PACK"
    single = type("Single", (), {"map_batches_kwargs": {}})()
    use_strict_pack(single)  # TP=1: Ray's stage asks for GPUs directly, no group
    assert "ray_remote_args_fn" not in single.map_batches_kwargs
