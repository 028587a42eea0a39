"""Item rows -> request rows in ray.data.llm's contract (pure functions, tested on CPU).

The request key identifies a request for resume and caching: sha256 of the item and setup,
model and revision, the messages (images by their sha256), the sampling params and the
grammar. The item ID is part of it because two items may ask the very same question, and
each must keep its own result row.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from actors.contract import check_columns, image_part, text_part
from geometry.answers import grammar_for

ITEM_COLUMNS_NEEDED = (
    "item_id",
    "setup",
    "system_prompt",
    "prompt",
    "image",
    "answer_type",
    "options",
)


@dataclass(frozen=True)
class SamplingConfig:
    """What a run asks of the engine; every field goes into the request key."""

    temperature: float = 0.0
    max_tokens: int = 2048
    seed: int = 0


def build_messages(system_prompt: str, prompt: str, image: bytes | None) -> list[dict[str, Any]]:
    """OpenAI chat messages; the image (if any) comes before the question, as one part."""
    user: list[dict[str, Any]] = [image_part(image)] if image is not None else []
    user.append(text_part(prompt))
    return [
        {"role": "system", "content": [text_part(system_prompt)]},
        {"role": "user", "content": user},
    ]


def sampling_params(cfg: SamplingConfig, answer_type: str, options: list[str]) -> dict[str, Any]:
    return {
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
        "seed": cfg.seed,
        "structured_outputs": {"grammar": grammar_for(answer_type, options)},
    }


def request_key(
    item_id: str,
    setup: str,
    model: str,
    revision: str,
    system_prompt: str,
    prompt: str,
    image: bytes | None,
    params: dict[str, Any],
) -> str:
    payload = {
        "item": [item_id, setup],
        "model": [model, revision],
        "messages": [system_prompt, prompt],
        "image_sha256": hashlib.sha256(image).hexdigest() if image is not None else None,
        "sampling_params": params,  # carries the grammar
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def png_bytes(value: Any) -> bytes | None:
    """The image cell as bytes, or None. A block whose images are all null reaches a batch
    as a float array of NaN, and bytes(nan) would be four bytes of garbage, not None."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value) or None
    return None


def add_requests(
    batch: dict[str, np.ndarray], model: str, revision: str, sampling: SamplingConfig
) -> dict[str, np.ndarray]:
    """Ray Data step: adds `request_key`, `messages` and `sampling_params` to item rows."""
    check_columns(batch, ITEM_COLUMNS_NEEDED, "add_requests")
    keys, messages, params = [], [], []
    for i in range(len(batch["item_id"])):
        image = png_bytes(batch["image"][i])
        options = [str(o) for o in (batch["options"][i] if batch["options"][i] is not None else [])]
        p = sampling_params(sampling, str(batch["answer_type"][i]), options)
        system, prompt = str(batch["system_prompt"][i]), str(batch["prompt"][i])
        keys.append(
            request_key(
                str(batch["item_id"][i]),
                str(batch["setup"][i]),
                model,
                revision,
                system,
                prompt,
                image,
                p,
            )
        )
        messages.append(build_messages(system, prompt, image))
        params.append(p)
    out = dict(batch)
    out["request_key"] = np.array(keys, dtype=object)
    out["messages"] = _object_array(messages)
    out["sampling_params"] = _object_array(params)
    return out


def _object_array(values: list[Any]) -> np.ndarray:
    """A 1-D object array even when every element is a list of equal length."""
    arr = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # slice assignment would broadcast nested lists
        arr[i] = value
    return arr
