"""The vllm engine's request cache (pipelines/engines/stages/vllm_cache.py), around Ray's own
stage protocol (`StatefulStageUDF.__call__`, which the processor and GeoBuild's engine hosts
call) with Ray's engine call replaced by a counting stand-in: a second engine answers kept
rows without asking, a changed prompt or sampling is asked again, failed rows are never
kept, and answers arriving during a write go together in the next one. The real engine cut
short and rerun: noregeo/test_paid_once.py (vLLM's CPU build)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from ray.llm._internal.batch.stages.vllm_engine_stage import vLLMEngineStageUDF, vLLMOutputData

from actors.contract import prompt_ids_digest
from pipelines.engines.stages.vllm_cache import CachedEngineUDF, GroupedWrites
from pipelines.engines.stages.vllm_rows import vllm_postprocess
from store.request_cache import RequestCache, read_cache
from store.storage import location

DATA = "__data"


class Asked:
    """Ray's engine call stood in for: every row it is asked, an answer made of the row."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.gate: asyncio.Event | None = None  # set: answers wait for it

    async def udf(self, batch: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        for row in batch:
            self.rows.append(dict(row))
            if self.gate is not None:
                await self.gate.wait()
            ids = [int(i) for i in row.pop("tokenized_prompt")] + [7, 7]  # vLLM adds some
            params = row.pop("sampling_params")
            failed = params.get("fail", False)
            data = vLLMOutputData(
                prompt=row.pop("prompt"),
                prompt_token_ids=ids,
                num_input_tokens=len(ids),
                generated_tokens=[5, 6, 9],
                generated_text=f"answer to {ids} at {params['temperature']}",
                num_generated_tokens=3,
            )
            # vLLM's per-request stats, as Ray's vLLMOutputData.from_vllm_engine_output
            # copies them (RequestStateStats fields).
            data.metrics = {"arrival_time": 1.5, "first_token_latency": 0.25}
            yield {
                **data.model_dump(),
                "request_id": len(self.rows),
                "__idx_in_batch": row["__idx_in_batch"],
                "batch_uuid": "b",
                "time_taken_llm": 0.5,
                "params": "",
                "__inference_error__": "engine said no" if failed else "",
            }


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Asked:
    stand_in = Asked()

    def udf(_engine: Any, batch: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        return stand_in.udf(batch)

    monkeypatch.setattr(vLLMEngineStageUDF, "udf", udf)
    return stand_in


def _engine(folder: Path, keep_tokens: bool = False) -> CachedEngineUDF:
    """A CachedEngineUDF without vLLM: what its __init__ sets, less Ray's engine."""
    udf = CachedEngineUDF.__new__(CachedEngineUDF)
    udf.data_column = DATA
    udf.expected_input_keys = set()
    udf.engine_kwargs = {"dtype": "float32", "max_model_len": 512}
    udf.cache = RequestCache(location(str(folder)))
    udf.keep_tokens = keep_tokens
    udf.writes = GroupedWrites(udf.cache.put)
    udf.asking = {}
    udf.answered = {}
    udf.answer_kwargs = {"dtype": "float32", "max_model_len": 512}
    return udf


def _row(i: int, temperature: float = 0.0, key: str | None = "k", **params: Any) -> dict[str, Any]:
    return {
        "request_key": None if key is None else f"{key}{i}",
        "prompt": f"question {i}",
        "tokenized_prompt": [1, 2, i],
        "sampling_params": {"temperature": temperature, "max_tokens": 8, **params},
    }


def _run(udf: CachedEngineUDF, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows through Ray's stage protocol, as a stage actor calls it."""

    return asyncio.run(_collect(udf, rows))


def _final(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What evaluate keeps of each row: our postprocess's columns."""
    post = vllm_postprocess(None)
    keep = ("generated_text", "num_input_tokens", "num_generated_tokens", "prompt_ids_sha256")
    return [{k: post(dict(r))[k] for k in (*keep, "time_taken_llm")} for r in rows]


def test_a_second_engine_answers_kept_rows_without_asking(asked: Asked, tmp_path: Path) -> None:
    rows = [_row(i) for i in range(4)]
    engine = _engine(tmp_path)
    first = _run(engine, rows)
    assert len(asked.rows) == 4
    assert len(read_cache(location(str(tmp_path)))) == 4  # each kept before the batch left
    assert engine.answered == {}  # written: no second copy in memory, the cache has them
    assert _final(_run(engine, rows)) == _final(first) and len(asked.rows) == 4
    again = _run(_engine(tmp_path), rows)  # another actor, another run
    assert len(asked.rows) == 4, "a kept row was asked again"
    assert _final(again) == _final(first)
    # The digest is of the ids vLLM read (its added ids included), kept as it was.
    assert _final(again)[0]["prompt_ids_sha256"] == prompt_ids_digest([1, 2, 0, 7, 7])


def test_what_changes_the_answer_is_asked_again(asked: Asked, tmp_path: Path) -> None:
    _run(_engine(tmp_path), [_row(i) for i in range(3)])
    hotter = [_row(0, temperature=0.7)]
    other_prompt = [{**_row(1), "tokenized_prompt": [1, 2, 99]}]
    keyless = [_row(2, key=None)]
    _run(_engine(tmp_path), hotter + other_prompt + keyless)
    assert len(asked.rows) == 6
    wider = _engine(tmp_path)
    wider.answer_kwargs = {"dtype": "float32", "max_model_len": 4096}
    _run(wider, [_row(0)])
    assert len(asked.rows) == 7  # another context length: another answer


def test_a_failed_row_is_never_kept(asked: Asked, tmp_path: Path) -> None:
    _run(_engine(tmp_path), [_row(0, fail=True), _row(1)])
    _run(_engine(tmp_path), [_row(0, fail=True), _row(1)])
    assert [r["request_key"] for r in asked.rows] == ["k0", "k1", "k0"]


def test_a_reasoning_models_tokens_come_back(asked: Asked, tmp_path: Path) -> None:
    _run(_engine(tmp_path, keep_tokens=True), [_row(0)])
    (again,) = _run(_engine(tmp_path, keep_tokens=True), [_row(0)])
    assert len(asked.rows) == 1
    assert list(again["generated_tokens"]) == [5, 6, 9]


@pytest.mark.parametrize("keep_tokens", [False, True])
def test_answered_and_cached_batches_make_blocks_ray_can_join(
    asked: Asked, tmp_path: Path, keep_tokens: bool
) -> None:
    """A batch the engine answered and one answered from the cache leave the stage as
    blocks that Ray Data joins into one (its own concat, as when a restarted actor's batch
    comes from the cache: seen failing on a lost node with "'pyarrow.lib.DataType' object
    is not iterable", the engine's stats a struct in one block and null in the other)."""
    from ray.data._internal.arrow_ops.transform_pyarrow import concat

    answered = _run(_engine(tmp_path, keep_tokens), [_row(0), _row(1)])
    cached = _run(_engine(tmp_path, keep_tokens), [_row(0), _row(1)])
    assert len(asked.rows) == 2
    blocks = [pa.Table.from_pylist([{DATA: r} for r in rows]) for rows in (answered, cached)]
    joined = concat(blocks)
    assert joined.num_rows == 4
    assert blocks[0].schema == blocks[1].schema


def test_a_batch_sent_twice_at_once_is_asked_once(asked: Asked, tmp_path: Path) -> None:
    """Ray retries a lost forwarder's calls on the restarted host while the new forwarder
    sends the same batch (seen on a lost node: 11 answers made for 8 rows): the second
    call waits for the first's answers; both get every row."""
    udf = _engine(tmp_path)
    rows = [_row(i) for i in range(3)]

    async def both() -> list[list[dict[str, Any]]]:
        asked.gate = asyncio.Event()
        calls = [asyncio.ensure_future(_collect(udf, rows)) for _ in range(2)]
        while len(asked.rows) < 1:  # the first call is asking
            await asyncio.sleep(0)
        for _ in range(100):  # the second has seen the rows being asked, and waits
            await asyncio.sleep(0)
        asked.gate.set()
        return list(await asyncio.gather(*calls))

    first, second = asyncio.run(both())
    assert len(asked.rows) == 3, f"{len(asked.rows)} rows asked for 3"
    assert _final(first) == _final(second)


async def _collect(udf: CachedEngineUDF, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outs = [out async for out in udf({DATA: [dict(r) for r in rows]})]
    return list(outs[0][DATA])


def test_answers_arriving_during_a_write_go_in_the_next_one() -> None:
    writes: list[set[str]] = []
    entered, release = threading.Event(), threading.Event()

    def put(answers: Mapping[str, Any]) -> None:
        entered.set()
        release.wait(30)
        writes.append(set(answers))

    async def scenario() -> None:
        grouped = GroupedWrites(put)
        grouped.add("a", {})
        await asyncio.to_thread(entered.wait, 30)  # the first write is under way
        grouped.add("b", {})
        grouped.add("c", {})
        release.set()
        await grouped.written()

    asyncio.run(scenario())
    assert writes == [{"a"}, {"b", "c"}]
