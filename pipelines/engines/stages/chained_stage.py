"""Ray's chat-template and tokenize stages in one actor.

Ray 2.60's processor gives each CPU stage an actor pool of its own
(`build_cpu_stage_map_kwargs` in ray/llm/_internal/batch/processor/utils.py): before the
first row, the chat-template actor and the tokenize actor each start a worker process,
import transformers and load the model's tokenizer, and every batch travels through the
object store once more between them. `ChainedStage` runs both of Ray's own UDFs, built from
their own constructor arguments, one after the other in one actor; the first's output
reaches the second as Ray Data would hand it over (a block, then a numpy batch), so a
template sees the same rows either way (tests/pipelines/engines/stages/test_chained_stage.py). The
stage keeps the chat-template stage's pool and resources (both are CPU_STAGE_CPUS).

Measured on 2 cores with the real SmolLM2 (25-row evaluate, interleaved 3 x 2): 43.9 s
separate, 39.5 s chained, the same rows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from ray.llm._internal.batch.stages.base import StatefulStage, StatefulStageUDF

from pipelines.engines.stages.ray_blocks import batch_of, block_of

CHAINED_NAME = "ChatTemplateAndTokenizeStage"


class ChainedUDF(StatefulStageUDF):
    """Ray Data stage UDF: Ray's UDFs of `parts` (class, constructor arguments) in turn."""

    def __init__(
        self,
        data_column: str,
        expected_input_keys: list[str],
        parts: list[tuple[type[StatefulStageUDF], dict[str, Any]]],
    ) -> None:
        super().__init__(data_column, expected_input_keys)
        self.udfs = [fn(**kwargs) for fn, kwargs in parts]

    async def __call__(self, batch: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Each UDF's output batch becomes the next one's input, as between two stages."""
        for udf in self.udfs[:-1]:
            outputs = [out async for out in udf(batch)]
            if not any(outputs):  # Ray's UDFs answer an empty batch with {}
                yield {}
                return
            batch = batch_of(block_of(batches=outputs))
        async for out in self.udfs[-1](batch):
            yield out


class ChainedStage(StatefulStage):
    """The stages of `parts` as one, with the first one's inputs and map_batches arguments."""

    fn: Any = ChainedUDF  # a class default: Ray's field is typed as an instance
    parts: list[Any]

    def get_required_input_keys(self) -> dict[str, str]:
        """What the first stage reads."""
        return dict(self.parts[0].get_required_input_keys())

    def get_optional_input_keys(self) -> dict[str, str]:
        """What the first stage may read."""
        return dict(self.parts[0].get_optional_input_keys())


def chain(parts: list[Any], data_column: str) -> ChainedStage:
    """One stage running `parts` (adjacent stages of a processor) in one actor."""
    return ChainedStage(
        parts=parts,
        fn_constructor_kwargs={"parts": [(p.fn, _udf_kwargs(p, data_column)) for p in parts]},
        map_batches_kwargs=dict(parts[0].map_batches_kwargs),
    )


def _udf_kwargs(stage: Any, data_column: str) -> dict[str, Any]:
    """The stage UDF's constructor arguments, as Ray's processor passes them."""
    # The stage's own batch size: another one changes only what Ray's method logs (a
    # warning that would reach the run's console).
    batch_size = int(stage.map_batches_kwargs.get("batch_size") or 1)
    kwargs = stage.get_dataset_map_batches_kwargs(batch_size, data_column)
    return dict(kwargs["fn_constructor_kwargs"])


def chain_template_and_tokenize(processor: Any) -> None:
    """Put one ChainedStage in place of the processor's chat-template and tokenize stages
    (adjacent in Ray's processor); a processor without both stays as it is."""
    from ray.llm._internal.batch.processor.base import Processor
    from ray.llm._internal.batch.stages import ChatTemplateStage, TokenizeStage

    items = list(processor.stages.items())
    kinds = [type(stage) for _, stage in items]
    if ChatTemplateStage not in kinds or TokenizeStage not in kinds:
        return
    first = kinds.index(ChatTemplateStage)
    if kinds[first + 1 : first + 2] != [TokenizeStage]:
        names = [name for name, _ in items]
        raise ValueError(f"the processor's tokenize stage does not follow its template: {names}")
    chained = chain([stage for _, stage in items[first : first + 2]], Processor.DATA_COLUMN)
    items[first : first + 2] = [(CHAINED_NAME, chained)]
    processor.stages = OrderedDict(items)


def unchained(stages: list[Any]) -> list[Any]:
    """`stages` with each ChainedStage's parts in its place."""
    return [p for s in stages for p in (s.parts if isinstance(s, ChainedStage) else [s])]
