"""The vllm engine stage as `evaluate` builds it, with vLLM's engine answering at once
(actors/instant_vllm.py): the GPU-feed bench (bench/feed.py) and the placement-group
scenario (tests/pipelines/tp_groups_scenario.py) run the rest of the path as it is."""

from __future__ import annotations

from typing import Any


def instant_vllm_stage(ds: Any, cfg: Any, opts: Any, separate: bool = False) -> Any:
    """The vllm engine stage as evaluate builds it, its engine answering at once;
    `separate`: Ray's chat-template and tokenize stages in their own actors again, as Ray's
    processor builds them (pipelines/engines/stages/chained_stage.py runs them in one)."""
    from collections import OrderedDict

    from actors.instant_vllm import use_instant_engine
    from pipelines.engines.stages.chained_stage import unchained
    from pipelines.engines.stages.options import LIGHT_CPUS
    from pipelines.engines.stages.vllm_path import build_vllm_processor
    from pipelines.engines.stages.vllm_rows import normalise_engine_errors

    processor = build_vllm_processor(cfg, opts)
    if separate:
        stages = unchained(list(processor.stages.values()))
        processor.stages = OrderedDict((type(stage).__name__, stage) for stage in stages)
    use_instant_engine(processor)
    return processor(ds).map_batches(normalise_engine_errors, num_cpus=LIGHT_CPUS)
