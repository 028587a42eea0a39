"""The chat-template and tokenize stages chained in one actor (chained_stage.py) hand the
engine what Ray's two separate stages hand it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.requests import build_messages
from pipelines.engines.stages.chained_stage import CHAINED_NAME, ChainedUDF, unchained
from pipelines.engines.stages.options import EngineOptions
from pipelines.engines.stages.vllm_path import build_vllm_processor

SYSTEM = "You are a careful geometer."
QUESTION = "Points A=(2,1), B=(4,5). Is AB vertical?"
PNG = b"\x89PNG not decoded by a text model's stages"


def _through(processor: Any, stages: list[Any], rows: list[dict[str, Any]]) -> list[Any]:
    """`rows` through the processor's preprocess and `stages`, as Processor.__call__ maps
    them; each row's data column, in item order."""
    import ray
    from ray.llm._internal.batch.processor.base import Processor

    ds: Any = ray.data.from_items(rows)
    ds = ds.map(processor.preprocess, **processor.preprocess_map_kwargs)
    for stage in stages:
        kwargs = stage.get_dataset_map_batches_kwargs(2, Processor.DATA_COLUMN)
        ds = ds.map_batches_internal(stage.fn, **kwargs)
    data = [row[Processor.DATA_COLUMN] for row in ds.take_all()]
    return sorted(data, key=lambda row: row["item_id"])


def test_the_chained_stage_renders_and_tokenizes_as_rays_two_stages(
    ray_local: Any, tiny_llm_dir: Path
) -> None:
    """Row for row the same prompt and token ids as the template and tokenize stages in
    their own actors, for plain text and for lists of parts with and without an image (the
    tiny template prints content as it comes: what Ray Data hands over shows in the
    prompt), over batches of 2."""
    cfg = ModelConfig(name="tiny", repo=str(tiny_llm_dir), engine="vllm")
    processor = build_vllm_processor(cfg, EngineOptions())
    assert list(processor.stages).count(CHAINED_NAME) == 1
    chained = processor.stages[CHAINED_NAME]
    names = [type(stage).__name__ for stage in unchained([chained])]
    assert names == ["ChatTemplateStage", "TokenizeStage"]
    rows = [
        {
            "item_id": f"i{k}",
            "messages": build_messages(SYSTEM, QUESTION, image, text_only),
            "sampling_params": {"max_tokens": 8},
        }
        for k, (image, text_only) in enumerate(
            [(None, True), (None, False), (PNG, False), (None, True), (PNG, False)]
        )
    ]
    together = _through(processor, [chained], rows)
    apart = _through(processor, list(chained.parts), rows)
    assert [row["item_id"] for row in together] == [f"i{k}" for k in range(5)]
    for one, two in zip(together, apart, strict=True):
        assert one["prompt"] == two["prompt"]
        assert list(one["tokenized_prompt"]) == list(two["tokenized_prompt"])
    assert QUESTION in together[0]["prompt"] and len(together[0]["tokenized_prompt"]) > 10


async def _all(udf: ChainedUDF, batch: Any) -> list[Any]:
    return [out async for out in udf(batch)]


def test_an_empty_batch_gives_rays_empty_answer(tiny_llm_dir: Path) -> None:
    """Ray's UDFs answer an empty Arrow batch with {} (its FIXME in stages/base.py); the
    chain passes that on instead of handing {} to the tokenizer (which would raise)."""
    import asyncio

    cfg = ModelConfig(name="tiny", repo=str(tiny_llm_dir), engine="vllm")
    chained = build_vllm_processor(cfg, EngineOptions()).stages[CHAINED_NAME]
    kwargs = chained.get_dataset_map_batches_kwargs(2, "__data")["fn_constructor_kwargs"]
    udf = ChainedUDF(**kwargs)
    assert asyncio.run(_all(udf, pa.table({"__data": pa.array([], pa.string())}))) == [{}]


def test_a_tokenize_stage_not_right_after_the_template_is_refused(
    tiny_llm_dir: Path,
) -> None:
    from collections import OrderedDict

    from pipelines.engines.stages.chained_stage import chain_template_and_tokenize

    cfg = ModelConfig(name="tiny", repo=str(tiny_llm_dir), engine="vllm")
    processor = build_vllm_processor(cfg, EngineOptions())
    chat, tokenize = processor.stages[CHAINED_NAME].parts
    processor.stages = OrderedDict([("TokenizeStage", tokenize), ("ChatTemplateStage", chat)])
    with pytest.raises(ValueError, match="does not follow its template"):
        chain_template_and_tokenize(processor)
