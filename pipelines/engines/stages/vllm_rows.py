"""The rows around Ray's vLLM processor: what was asked kept aside before the engine (Ray
pops the sampling params and overwrites the prompt), our columns after it (the error, the
prompt ids' digest, a reasoning model's answer and budget), and rows that failed inside it
given the same columns."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from actors.contract import ENGINE_OUTPUT, numpy_columns, object_array, prompt_ids_digest
from pipelines.engines.prompts.reasoning import OUT_OF_BUDGET, ThinkingMarkers, out_of_budget

# Ray's vLLM engine pops `sampling_params` off each row it runs, and its chat-template stage
# writes the rendered template into `prompt`, over the item's own question. The rows keep
# both aside here and get them back after the engine (results and GeoBuild rounds record
# what was asked; a stored `prompt` that is the whole template was seen here).
KEPT_PARAMS = "geosee_sampling_params"

KEPT_PROMPT = "geosee_prompt"

KEPT = {"sampling_params": KEPT_PARAMS, "prompt": KEPT_PROMPT}


def keep_asked() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Preprocess: keeps the row's sampling params (and question) aside for after the engine.
    A reasoning model's max_tokens grows by its thinking budget (vLLM forces the end of
    reasoning there), so the reasoning cannot eat the tokens the answer needs; the kept copy
    stays as asked."""

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        asked = row["sampling_params"]
        params = copy.deepcopy(dict(asked))
        budget = params.get("thinking_token_budget")
        if budget:
            params["max_tokens"] = int(params["max_tokens"]) + int(budget)
        out = {"sampling_params": params, KEPT_PARAMS: copy.deepcopy(asked)}
        if "prompt" in row:  # NoReGeo rows carry the item's question; GeoBuild rows do not
            out[KEPT_PROMPT] = row["prompt"]
        return out

    return preprocess


def vllm_postprocess(
    reasoning_end: str | None, markers: ThinkingMarkers | None = None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Postprocess: our error column; a reasoning model's answer without its reasoning (the
    text after the last end-of-reasoning marker; what the grammar constrained) and whether
    the row ran out of budget (`pipelines.engines.prompts.reasoning`)."""

    def postprocess(row: dict[str, Any]) -> dict[str, Any]:
        text = row.get("generated_text")
        if reasoning_end and isinstance(text, str) and reasoning_end in text:
            text = text.rsplit(reasoning_end, 1)[1].lstrip()
        # The ids vLLM received (Ray's vLLMOutputData.prompt_token_ids), as a digest; a row
        # of the request cache (vllm_cache) brings the digest kept when it was answered.
        ids = row.get("prompt_token_ids")
        digest = row.get("prompt_ids_sha256") or prompt_ids_digest(
            None if ids is None else list(ids)
        )
        out = {**row, "generated_text": text, "engine_error": None, "prompt_ids_sha256": digest}
        for column, kept in KEPT.items():
            if kept in out:
                out[column] = out.pop(kept)
        if markers is not None:
            asked = out["sampling_params"]
            budget = int(asked.get("thinking_token_budget") or 0)
            out[OUT_OF_BUDGET] = out_of_budget(
                list(row.get("prompt_token_ids") or []),
                list(row.get("generated_tokens") or []),
                markers,
                budget,
                int(asked["max_tokens"]) + budget,
            )
        return out

    return postprocess


def normalise_engine_errors(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows that failed inside ray.data.llm skip postprocess: give them our error column
    (and their kept columns back)."""
    out = dict(batch)
    n = len(next(iter(batch.values())))
    errors = batch.get("__inference_error__")
    out.pop("__inference_error__", None)
    for column, kept_column in KEPT.items():
        kept = out.pop(kept_column, None)
        if kept is None:
            continue
        # Failed rows skipped postprocess: their own values are still aside, and win.
        current = out.get(column)
        if current is None:
            current = np.array([None] * n, dtype=object)
        merged = [c if k is None else k for c, k in zip(current, kept, strict=True)]
        out[column] = object_array(merged)
    if errors is not None:
        engine_error = np.array([e if e else None for e in errors], dtype=object)
        out["engine_error"] = engine_error
    missing = pa.schema([f for f in ENGINE_OUTPUT if f.name not in out])
    out.update(numpy_columns(missing, {c: [None] * n for c in missing.names}))
    return out
