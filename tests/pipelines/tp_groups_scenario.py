"""Three tensor-parallel (TP=2) models one after another in one driver on 4 logical GPUs,
each through Ray's own vLLM processor (its engine stage, resource request and placement
groups as Ray builds them) with the engine UDF swapped for an instant stand-in
(actors.instant_vllm), so no model loads. After each model it prints one JSON line: the
model, its rows, and the placement groups Ray still holds in CREATED or PENDING.

Run by tests/pipelines/engines/stages/test_placement_groups.py in a process of its own (its own Ray
with logical GPUs): `python -m tests.pipelines.tp_groups_scenario FOLDER`. On Ray 2.60's own
stage (ray-project/ray#64035) the first model's group stayed CREATED, holding 2 of the 4
GPUs, the second's too, and the third waited forever for its GPUs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MODELS = 3
TP = 2
GPUS = 4
TASK = "C-BCT-CT"


def held_groups() -> list[dict[str, Any]]:
    """Placement groups that still reserve (or wait for) resources."""
    import ray

    table = ray.util.placement_group_table()
    return [
        {"id": pg_id, "state": g["state"], "strategy": g["strategy"]}
        for pg_id, g in table.items()
        if g["state"] in ("CREATED", "PENDING")
    ]


def main(folder: Path) -> None:
    import ray
    import torch

    from pipelines.engines.models.config_from_checkpoint import checkpoint_config
    from pipelines.engines.models.tiny_model import build_tiny_model
    from pipelines.engines.stages.instant_stage import instant_vllm_stage
    from pipelines.noregeo.evaluate_pipeline import evaluate
    from pipelines.noregeo.generate import generate
    from pipelines.noregeo.run_settings import EvaluateSettings
    from store.storage import children

    torch.set_num_threads(1)
    ray.init(num_cpus=8, num_gpus=GPUS, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    model = build_tiny_model("llm", folder / "tiny", seed=0)
    items = folder / "items"
    generate(items, [TASK], per_task=2, seed=0, setups=["text"], image_size=64)
    files = children(items, "part-*.parquet")
    run = EvaluateSettings(tasks=[TASK], setups=["text"])
    config = json.loads((model / "config.json").read_text())
    for i in range(MODELS):
        cfg = checkpoint_config("vllm", f"tp2-{i}", str(model), "main", config, False)
        cfg = cfg.model_copy(update={"tensor_parallel_size": TP})
        rows = evaluate(files, cfg, run, folder / "out", engine_stage=instant_vllm_stage)
        strategies = sorted({g["strategy"] for g in ray.util.placement_group_table().values()})
        line = {"model": cfg.name, "rows": rows, "held": held_groups(), "made": strategies}
        print(json.dumps(line), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
