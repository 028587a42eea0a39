"""A stand-in for Ray's vLLM engine UDF that answers at once: everything else runs as is.

It takes what Ray's `vLLMEngineStageUDF` takes (its constructor arguments, rows with their
tokenized prompt, multimodal data and sampling params) and returns rows of the same shape:
the item's stored answer (which has the exact model-output shape, as the oracle's), the
prompt's token ids, no generated tokens. With it, a pipeline built by Ray's processor
measures its own ceiling (bench/feed.py) and tests exercise the engine stage's scheduling
(its tensor-parallel placement groups) without loading a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ray.llm._internal.batch.stages.base import StatefulStageUDF


class InstantEngineUDF(StatefulStageUDF):
    """Ray Data stage UDF in place of vLLM's: one reply per row, no model."""

    def __init__(
        self, data_column: str, expected_input_keys: list[str], **_engine_args: Any
    ) -> None:
        super().__init__(data_column, expected_input_keys)
        self.rows = 0

    async def udf(  # type: ignore[override,misc]  # Ray declares an async def returning one
        self, batch: list[dict[str, Any]]
    ) -> AsyncIterator[dict[str, Any]]:
        """The stored answer of each row (an empty object where there is none)."""
        for row in batch:
            self.rows += 1
            ids = row.get("tokenized_prompt")
            ids = [] if ids is None else [int(i) for i in ids]
            answer = row.get("answer")
            yield {
                "prompt": row.get("prompt", ""),
                "prompt_token_ids": ids,
                "num_input_tokens": len(ids),
                "generated_text": "{}" if answer is None else str(answer),
                "generated_tokens": [],
                "num_generated_tokens": 0,
                "request_id": self.rows,
                self.IDX_IN_BATCH_COLUMN: row[self.IDX_IN_BATCH_COLUMN],
                "time_taken_llm": 0.0,
                "params": "",
                "__inference_error__": "",
            }


def use_instant_engine(processor: Any) -> None:
    """Swap the processor's vLLM engine UDF for `InstantEngineUDF` (its scheduling, resource
    request and placement groups stay Ray's)."""
    from ray.llm._internal.batch.stages.vllm_engine_stage import vLLMEngineStage

    for stage in processor.stages.values():
        if isinstance(stage, vLLMEngineStage):
            placement = stage.map_batches_kwargs.get("ray_remote_args_fn")
            # The stage validates assignments: Ray's validator runs again and puts its own
            # placement-group function back, over the one the processor was built with.
            stage.fn = InstantEngineUDF
            if placement is not None:
                stage.map_batches_kwargs["ray_remote_args_fn"] = placement
