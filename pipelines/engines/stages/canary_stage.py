"""The prompt canary's Ray side (`prompt_canary` holds the checks): the processor's own
preprocess and stages up to its engine, then one check stage, over a few rows.

Each stage keeps its class, constructor arguments and resources from the processor, so its
actor is placed as the run's is (Ray Data's scheduling, on a worker node of a multi-node
cluster) and loads the same sources, and the rows reach it in the shape Ray Data gives the
run's (Arrow in between: a list of parts can arrive as a numpy array, which some templates
print as its repr). Only the pool is one actor per stage: a handful of rows.

That is `render`, for a cluster of several nodes. On one node the actors would run beside
the driver with the same files, and starting them (a worker process each, importing
transformers and loading a tokenizer) cost more than the rest of the run's start: there
`render_here` builds the same stage classes in the driver and converts the rows between
them with Ray Data's own block code, as `map` and `map_batches` do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from ray.llm._internal.batch.stages.base import StatefulStage, StatefulStageUDF

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.prompt_canary import (
    CHECKS,
    EXPECT,
    RESULT,
    CanaryError,
    Expected,
    canary_rows,
    failed_check,
    failure_line,
    short,
)
from pipelines.engines.stages.chained_stage import unchained
from pipelines.engines.stages.ray_blocks import batch_of, block_of, rows_of


class CanaryUDF(StatefulStageUDF):
    """Ray stage UDF: decodes each row's `tokenized_prompt` with the tokenize stage's own
    tokenizer (loaded by Ray's TokenizeUDF from that stage's constructor arguments) and,
    for an image-text model, names the placeholder each of its images needs in the prompt.

    The placeholder rule is vLLM's (`get_placeholder_str` of the model class, found from
    the prepare-multimodal stage's own vLLM ModelConfig): what its chat parser inserts and
    its multimodal processor expands. Where vLLM names none (Pixtral, Mistral-Small-3.1,
    Molmo: their processors find or insert the image tokens themselves), the HF processor's
    `image_token` as the chat-template stage loads it (`[IMG]` for the Mistral family);
    None where neither names one (the check is then recorded as not made)."""

    def __init__(
        self,
        data_column: str,
        expected_input_keys: list[str],
        tokenize_kwargs: dict[str, Any],
        chat_template_kwargs: dict[str, Any],
        multimodal_kwargs: dict[str, Any] | None,
        built: Sequence[StatefulStageUDF] = (),
    ) -> None:
        """`built`: the stages' UDFs already built in this process (`render_here`), used
        instead of loading their tokenizer, model config or processor a second time."""
        from ray.llm._internal.batch.stages.tokenize_stage import TokenizeUDF

        super().__init__(data_column, expected_input_keys)
        self.built = built
        self.tokenizer = self._udf(TokenizeUDF, tokenize_kwargs).tokenizer
        self.chat_template_kwargs = chat_template_kwargs
        self.model_cls: Any = None
        self.image_token: str | None = None  # the HF processor's, loaded when vLLM has none
        if multimodal_kwargs is not None:
            from ray.llm._internal.batch.stages.prepare_multimodal_stage import (
                PrepareMultimodalUDF,
            )
            from vllm.model_executor.model_loader import get_model_cls

            stage = self._udf(PrepareMultimodalUDF, multimodal_kwargs)
            self.model_cls = get_model_cls(stage.model_config)
            if self.model_cls.get_placeholder_str("image", 1) is None:
                self.image_token = self._processor_image_token()

    def _udf(self, cls: type[Any], kwargs: dict[str, Any]) -> Any:
        """The stage UDF of class `cls`: the one built already, else one built from `kwargs`."""
        done = next((udf for udf in self.built if isinstance(udf, cls)), None)
        return done if done is not None else cls(self.data_column, [], **kwargs)

    def _processor_image_token(self) -> str | None:
        from ray.llm._internal.batch.stages.chat_template_stage import ChatTemplateUDF

        processor = self._udf(ChatTemplateUDF, self.chat_template_kwargs).processor
        token = getattr(processor, "image_token", None)
        return token if isinstance(token, str) and token else None

    def placeholders(self, images: int) -> list[str | None] | None:
        """The placeholder string of images 1..max(images, 1); None: a text model."""
        if self.model_cls is None:
            return None
        count = max(images, 1)
        named = [self.model_cls.get_placeholder_str("image", i) for i in range(1, count + 1)]
        return [self.image_token if p is None else p for p in named]

    # Ray declares `udf` as a plain coroutine; its own stages override it with async
    # generators, as here.
    async def udf(  # type: ignore[override,misc]
        self, batch: list[dict[str, Any]]
    ) -> AsyncIterator[dict[str, Any]]:
        """One RESULT cell per row: its decoded prompt and its images' placeholders."""
        for row in batch:
            ids = [int(i) for i in row["tokenized_prompt"]]
            decoded = self.tokenizer.decode(
                ids, skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
            images = Expected.from_json(row[EXPECT]).images
            result = {"decoded": decoded, "placeholders": self.placeholders(images)}
            yield {
                self.IDX_IN_BATCH_COLUMN: row[self.IDX_IN_BATCH_COLUMN],
                RESULT: json.dumps(result),
            }


class CanaryStage(StatefulStage):
    """The check stage, after the tokenize stage and with its resources."""

    fn: type[StatefulStageUDF] = CanaryUDF

    def get_required_input_keys(self) -> dict[str, str]:
        """What CanaryUDF reads of each row."""
        return {"tokenized_prompt": "the tokenize stage's ids", EXPECT: "what the driver expects"}


def _result(row: dict[str, Any]) -> dict[str, Any]:
    """Only the canary's cells go back to the driver, not the rows' images."""
    data = row["__data"]
    return {EXPECT: data[EXPECT], RESULT: data[RESULT]}


def _stages(processor: Any) -> list[Any]:
    """The processor's stages before its engine, then the check stage."""
    from ray.llm._internal.batch.stages import (
        ChatTemplateStage,
        PrepareMultimodalStage,
        TokenizeStage,
        vLLMEngineStage,
    )

    stages = unchained(list(processor.stages.values()))
    before = stages[: next(i for i, s in enumerate(stages) if isinstance(s, vLLMEngineStage))]
    tokenize = next(s for s in before if isinstance(s, TokenizeStage))
    chat = next(s for s in before if isinstance(s, ChatTemplateStage))
    multimodal = next((s for s in before if isinstance(s, PrepareMultimodalStage)), None)
    check = CanaryStage(
        fn_constructor_kwargs={
            "tokenize_kwargs": dict(tokenize.fn_constructor_kwargs),
            "chat_template_kwargs": dict(chat.fn_constructor_kwargs),
            "multimodal_kwargs": dict(multimodal.fn_constructor_kwargs) if multimodal else None,
        },
        map_batches_kwargs=dict(tokenize.map_batches_kwargs),
    )
    return [*before, check]


def _results(rows: list[dict[str, Any]]) -> list[tuple[Expected, dict[str, Any]]]:
    return [(Expected.from_json(r[EXPECT]), json.loads(r[RESULT])) for r in rows]


def render(processor: Any, rows: list[dict[str, Any]]) -> list[tuple[Expected, dict[str, Any]]]:
    """Run `rows` (prompt_canary.canary_rows) through the processor's preprocess and every
    stage before its engine, then the check stage, as a Ray Data pipeline whose actors are
    placed as the run's are (a worker node of a cluster); (expected, result) per row."""
    import ray
    from ray.llm._internal.batch.processor.base import Processor

    ds: Any = ray.data.from_items(rows)
    ds = ds.map(processor.preprocess, **processor.preprocess_map_kwargs)
    for stage in _stages(processor):
        kwargs = stage.get_dataset_map_batches_kwargs(len(rows), Processor.DATA_COLUMN)
        kwargs["compute"] = ray.data.ActorPoolStrategy(size=1)
        ds = ds.map_batches_internal(stage.fn, **kwargs)
    return _results(ds.map(_result, **processor.preprocess_map_kwargs).take_all())


def render_here(
    processor: Any, rows: list[dict[str, Any]]
) -> list[tuple[Expected, dict[str, Any]]]:
    """`render` in this process, for a run on one node, where the stages' actors would run
    beside this driver with the same files: the same stage classes built with the same
    constructor arguments, the rows turned into blocks and batches between steps by Ray
    Data's own code (DelegatingBlockBuilder, BlockAccessor), as `map` and `map_batches`
    do. Without actors to start (each a worker process importing transformers and loading
    its tokenizer: seconds on a small machine, before any row of the run)."""
    from ray.data.block import _apply_batch_format
    from ray.llm._internal.batch.processor.base import Processor

    # ray.data.from_items, then map(preprocess): a block of rows each way.
    block = block_of(rows=rows)
    block = block_of(rows=[processor.preprocess(row) for row in rows_of(block)])
    udfs: list[StatefulStageUDF] = []
    for stage in _stages(processor):
        kwargs = stage.get_dataset_map_batches_kwargs(len(rows), Processor.DATA_COLUMN)
        built = {"built": tuple(udfs)} if stage.fn is CanaryUDF else {}
        udf = stage.fn(**kwargs["fn_constructor_kwargs"], **built)
        udfs.append(udf)
        # map_batches' default format, resolved as map_batches resolves it (numpy).
        batch_format = _apply_batch_format(kwargs.get("batch_format", "default"))
        batch = batch_of(block, batch_format)
        block = block_of(batches=asyncio.run(_collected(udf(batch))))
    return _results([_result(row) for row in rows_of(block)])


async def _collected(outputs: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [out async for out in outputs]


def run_canary(
    processor: Any, cfg: ModelConfig, rows: Iterable[dict[str, Any]], here: bool = False
) -> dict[str, Any]:
    """Check the model's prompts through `processor`; the record for its results (the
    decoded prompt of each setup's first row). CanaryError (one line) when a check fails.
    `here`: the stages run in this process (a run on one node), not in Ray actors."""
    picked = canary_rows(rows)
    if not picked:
        return {"checked_rows": 0, "checks": list(CHECKS), "prompts": {}}
    try:
        results = (render_here if here else render)(processor, picked)
    except Exception as err:  # a stage that cannot render the rows fails the model here
        why = str(err).strip().splitlines()[-1] if str(err).strip() else repr(err)
        raise CanaryError(failure_line(cfg, "renders", short(why, 300), None, "")) from err
    order = [Expected.from_json(r[EXPECT]) for r in picked]
    results.sort(key=lambda pair: order.index(pair[0]))
    prompts: dict[str, str] = {}
    unchecked = []
    for expect, result in results:
        if expect.images and not all(result["placeholders"] or [None]):
            unchecked = ["image_placeholders"]  # no rule known: recorded, not guessed
        failed = failed_check(result["decoded"], expect, result["placeholders"])
        if failed is not None:
            raise CanaryError(failure_line(cfg, *failed, expect, result["decoded"]))
        prompts.setdefault(expect.setup, result["decoded"])
    checks = [c for c in CHECKS if c not in unchecked]
    return {
        "checked_rows": len(results),
        "checks": checks,
        "unchecked": unchecked,
        "prompts": prompts,
    }
