"""Ray's vLLM engine stage with the request cache (store.request_cache): each answer kept the
moment the engine gives it, and a row already answered by an earlier run not sent again.

Before, the vllm engine kept nothing: rows answered inside an engine batch, or finished and
queued in Ray Data between the engine and the writer, were lost to a Ctrl-C, a SIGTERM or
a lost node, and the rerun spent GPU time on them again (the hf and http engines had the
cache since issue 51). `CachedEngineUDF` is Ray's own `vLLMEngineStageUDF` (its engine,
batching and errors unchanged) with the cache around its `udf`: `evaluate`'s processor runs
it in Ray Data's pool (`use_request_cache`), GeoBuild's resident hosts hold it across rounds
(`vllm_resident.EngineHost`).

The key: the row's `request_key` and what the engine makes of it - the prompt token ids it
reads (the tokenize stage's), its sampling params as sent (a reasoning model's budget
added), and the engine arguments that change an answer (`ANSWER_ENGINE_KWARGS`). Kept: the
reply's text, token counts, time, the digest of the prompt ids vLLM read, and for a
reasoning model its generated ids (the postprocess counts the reasoning in them).

Writes are grouped: answers that arrive while one write is under way go in the next one
(a GPU engine answers faster than one object-store PUT per answer), and a batch leaves the
stage only once all its answers are written. A row that another batch of the same engine is
asking at that moment waits for that answer: after a lost node Ray sends a batch again to
the restarted host while the new forwarder sends it too (seen: 11 answers made for 8 rows).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from ray.llm._internal.batch.stages.vllm_engine_stage import vLLMEngineStageUDF, vLLMOutputData

from actors.contract import plain, prompt_ids_digest
from store.request_cache import TOKENS, Answer, RequestCache, cache_key
from store.storage import location

# Engine arguments that change what the model answers to the same prompt ids and sampling.
ANSWER_ENGINE_KWARGS = ("dtype", "max_model_len", "quantization", "kv_cache_dtype")
# Ray's error column: "" on an answered row.
ERROR_COLUMN = "__inference_error__"
# Engine output fields whose shape a kept answer cannot give (vLLM's per-request stats, log
# probabilities, embeddings) and nothing downstream reads: left out of every row, answered
# or kept alike, because Ray Data cannot join a block where one is a struct with a block
# where it is null ("'pyarrow.lib.DataType' object is not iterable", seen on a lost node).
UNKEPT_FIELDS = ("metrics", "logprobs", "prompt_logprobs", "embeddings")
TOKENS_FIELD = "generated_tokens"  # the engine's output name; kept for reasoning models only
# What Ray's engine call takes off each row it asks (vLLMEngineWrapper._prepare_llm_request
# at ray-2.60.0 pops them): a kept row loses them too, so both leave with the same columns.
ENGINE_INPUTS = (
    "prompt",
    "tokenized_prompt",
    "multimodal_data",
    "mm_processor_kwargs",
    "multimodal_uuids",
    "tokenization_kwargs",
    "sampling_params",
    "pooling_params",
)


class GroupedWrites:
    """Answers written as they arrive, those that come during a write in the next one."""

    def __init__(self, put: Callable[[Mapping[str, Answer]], None]) -> None:
        self._put = put
        self._pending: dict[str, Answer] = {}
        self._writing: asyncio.Task[None] | None = None

    def add(self, key: str, answer: Answer) -> None:
        """Queue an answer; a write starts now unless one is under way (it takes this next)."""
        self._pending[key] = answer
        if self._writing is None or self._writing.done():
            self._writing = asyncio.ensure_future(self._write_pending())

    async def _write_pending(self) -> None:
        while self._pending:
            taken, self._pending = self._pending, {}
            await asyncio.to_thread(self._put, taken)  # the engine's loop goes on meanwhile

    async def written(self) -> None:
        """Return once every answer added so far is written."""
        while self._writing is not None and not self._writing.done():
            await asyncio.shield(self._writing)
        if self._writing is not None:
            self._writing.result()  # a write that raised (not a refused store: that warns)


class CachedEngineUDF(vLLMEngineStageUDF):
    """`vLLMEngineStageUDF` answering from, and keeping each answer in, the request cache at
    `request_cache` (a results-store folder); `keep_tokens`: keep the generated ids too."""

    def __init__(
        self, *args: Any, request_cache: str, keep_tokens: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.cache = RequestCache(location(request_cache))
        self.keep_tokens = keep_tokens
        self.writes = GroupedWrites(self.cache.put)
        self.asking: dict[str, asyncio.Future[Answer | None]] = {}  # keys being asked now
        # This engine's answers whose write is under way (then the cache has them).
        self.answered: dict[str, Answer] = {}
        self.answer_kwargs = {k: self.engine_kwargs.get(k) for k in ANSWER_ENGINE_KWARGS}

    # Ray declares its `udf` as a coroutine returning an iterator; it is an async generator.
    async def udf(  # type: ignore[override,misc]
        self, batch: list[dict[str, Any]]
    ) -> AsyncIterator[dict[str, Any]]:
        """The batch's rows: answered from the cache, else by the engine and kept. A row
        that another batch of this engine is asking right now (the same batch sent again:
        Ray retries a lost forwarder's calls on the restarted host while the new forwarder
        sends them too) waits for that answer instead of being asked twice."""
        keys: dict[int, str] = {}
        asked, waiting = [], []
        for row in batch:
            key = self.key(row)
            kept = self.cache.get(key) if key is not None else None
            if kept is None and key is not None:
                kept = self.answered.get(key)  # answered, its write still under way
            if kept is not None:
                yield self.kept_row(row, kept)
            elif key is not None and key in self.asking:
                waiting.append((row, self.asking[key]))
            else:
                if key is not None:
                    keys[row[self.IDX_IN_BATCH_COLUMN]] = key
                    self.asking[key] = asyncio.get_running_loop().create_future()
                asked.append(row)
        try:
            if asked:
                async for out in super().udf(asked):  # Ray's engine call pops the inputs
                    out["prompt_ids_sha256"] = prompt_ids_digest(out.get("prompt_token_ids"))
                    key = keys.get(out[self.IDX_IN_BATCH_COLUMN])
                    if key is not None:
                        answer = self.answer_of(out) if out.get(ERROR_COLUMN, "") == "" else None
                        if answer is not None:
                            self.writes.add(key, answer)
                        self._settle(key, answer)
                    yield self.uniform(out)
        finally:
            for key in keys.values():  # cut short: whoever waits on these asks itself
                self._settle(key, None)
        for row, asking in waiting:
            answer = await asyncio.shield(asking)
            if answer is not None:
                yield self.kept_row(row, answer)
            else:  # that ask failed or was cut short: this batch asks
                async for out in self.udf([row]):
                    yield out
        await self.writes.written()  # the batch leaves only with its answers kept
        for key in keys.values():
            self.answered.pop(key, None)

    def _settle(self, key: str, answer: Answer | None) -> None:
        """The ask of `key` is over: its answer (None: none) to whoever waits on it."""
        if answer is not None:
            self.answered[key] = answer
        asking = self.asking.pop(key, None)
        if asking is not None and not asking.done():
            asking.set_result(answer)

    def kept_row(self, row: dict[str, Any], kept: Answer) -> dict[str, Any]:
        """The output of a row answered before (the cache, or another batch just now), its
        inputs taken off as the engine call would have."""
        out = self.cached_output(row, kept)
        for name in ENGINE_INPUTS:
            row.pop(name, None)
        return self.uniform(out)

    def key(self, row: dict[str, Any]) -> str | None:
        """The cache key of a row (module docstring); None without a request key."""
        request_key = row.get("request_key")
        if not request_key:
            return None
        ids = row.get("tokenized_prompt")
        if ids is not None:
            prompt = prompt_ids_digest(plain(ids))
        else:  # no tokenize stage: the text vLLM tokenizes
            prompt = hashlib.sha256(str(row.get("prompt", "")).encode()).hexdigest()
        engine = {
            "engine": "vllm",
            "prompt": prompt,
            "sampling_params": plain(row.get("sampling_params"), drop_none=True),
            "engine_kwargs": self.answer_kwargs,
        }
        return cache_key(str(request_key), engine)

    def uniform(self, out: dict[str, Any]) -> dict[str, Any]:
        """An output with the fields every row has, answered or kept (UNKEPT_FIELDS; the
        generated ids, all-empty in a block of kept rows, only where they are kept)."""
        dropped = UNKEPT_FIELDS if self.keep_tokens else (*UNKEPT_FIELDS, TOKENS_FIELD)
        return {name: value for name, value in out.items() if name not in dropped}

    def answer_of(self, out: dict[str, Any]) -> Answer:
        """What is kept of an engine output."""
        answer: Answer = {
            "generated_text": out.get("generated_text") or "",
            "num_input_tokens": int(out.get("num_input_tokens") or 0),
            "num_generated_tokens": int(out.get("num_generated_tokens") or 0),
            "time_taken_llm": max(float(out.get("time_taken_llm") or 0.0), 0.0),
            "prompt_ids_sha256": out["prompt_ids_sha256"],
        }
        if self.keep_tokens:
            answer[TOKENS] = [int(i) for i in plain(out.get(TOKENS_FIELD) or [])]
        return answer

    def cached_output(self, row: dict[str, Any], kept: Answer) -> dict[str, Any]:
        """An engine output (the columns Ray's engine gives) made of a kept answer. The
        prompt ids are the row's own (text models: what vLLM read; its digest is the kept
        one, of what vLLM read, image tokens included)."""
        ids = row.get("tokenized_prompt")
        data = vLLMOutputData(
            prompt=str(row.get("prompt", "")),
            prompt_token_ids=None if ids is None else [int(i) for i in plain(ids)],
            num_input_tokens=kept["num_input_tokens"],
            generated_tokens=kept.get(TOKENS) or [],
            generated_text=kept["generated_text"],
            num_generated_tokens=kept["num_generated_tokens"],
        )
        return {
            **data.model_dump(),
            "request_id": -1,
            self.IDX_IN_BATCH_COLUMN: row[self.IDX_IN_BATCH_COLUMN],
            "batch_uuid": "",
            "time_taken_llm": kept["time_taken_llm"],
            "params": "",
            ERROR_COLUMN: "",
            "prompt_ids_sha256": kept["prompt_ids_sha256"],
        }


def use_request_cache(engine: Any, request_cache: str, keep_tokens: bool) -> None:
    """Make Ray's engine stage `engine` (of a processor) run `CachedEngineUDF`. The stage
    validates assignments: Ray's validator runs again and puts its own placement-group
    function back (as actors/instant_vllm.py found), so the one the stage had is restored;
    a tensor-parallel engine's removable groups (placement_groups.use_strict_pack) are
    swapped in after this."""
    placement = engine.map_batches_kwargs.get("ray_remote_args_fn")
    engine.fn = CachedEngineUDF
    engine.fn_constructor_kwargs = {
        **engine.fn_constructor_kwargs,
        "request_cache": request_cache,
        "keep_tokens": keep_tokens,
    }
    if placement is not None:
        engine.map_batches_kwargs["ray_remote_args_fn"] = placement
