"""The one row contract every engine shares (ray.data.llm's, so the GPU path is Ray's own).

In: `messages` (OpenAI chat format; content is one string for text-only models, else a list
of parts, `{"type": "text", "text": ...}` or `{"type": "image_url", "image_url": {"url":
"data:image/png;base64,..."}}`: see `chat_message`),
`sampling_params` (`temperature`, `max_tokens`, `seed`, `structured_outputs` =
`{"grammar": EBNF}`), plus `answer_type` and `options` from which HTTP engines derive a
JSON schema. Out: every input column, plus OUTPUT_COLUMNS. A row that fails carries its
message in `engine_error` and `generated_text` = None; it never fails the batch.

Batches arrive in Ray Data's numpy format. Parts that went through Arrow carry the union of
all part keys (absent ones as None), so read parts with `.get()`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

OUTPUT_COLUMNS = (
    "generated_text",
    "num_input_tokens",
    "num_generated_tokens",
    "time_taken_llm",
    "engine_error",
)


def check_columns(batch: Iterable[str], needed: Iterable[str], step: str) -> None:
    """Fail with the step's name and the missing columns, not a KeyError deep inside.

    `batch` is anything listing column names: a numpy batch dict, `Table.column_names`.
    """
    have = set(batch)
    missing = [c for c in needed if c not in have]
    if missing:
        raise KeyError(f"{step}: batch lacks columns {missing}; has {sorted(have)}")


def message_parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A message's content as parts, whether it was given as a string or a list."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    # Ray hands content over as a numpy array, whose truth value is ambiguous: test None.
    return [] if content is None else list(content)


def image_part(png: bytes) -> dict[str, Any]:
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def chat_message(role: str, parts: list[dict[str, Any]], text_only: bool) -> dict[str, Any]:
    """One chat message in the shape the model's family expects.

    Text-only models get their content as one string: the chat templates of Llama-3.x,
    Qwen2.5 and most text models print `content` as it comes, so a list of parts (which Ray
    hands to the template as a numpy array) would render as its repr, e.g. `<ndarray>`, and
    the grammar would still force a valid-looking answer to a prompt the model never saw.
    Image-text models keep the list of parts their processors expand into image tokens.
    """
    if not text_only:
        return {"role": role, "content": parts}
    images = [p for p in parts if p.get("type") != "text"]
    if images:
        raise ValueError(f"a text-only model cannot take {images[0].get('type')} parts")
    return {"role": role, "content": "".join(str(p["text"]) for p in parts)}


def plain(value: Any, drop_none: bool = False) -> Any:
    """Numpy scalars and arrays (as Ray hands back Arrow lists and structs) to plain Python.

    Columns returned in Ray's numpy form would be pickled instead of stored as Arrow.
    `drop_none` drops the None-valued keys Arrow adds to structs (the union of all keys).
    """
    if isinstance(value, np.ndarray):
        return [plain(v, drop_none) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        kept = (kv for kv in value.items() if kv[1] is not None or not drop_none)
        return {str(k): plain(v, drop_none) for k, v in kept}
    if isinstance(value, list | tuple):
        return [plain(v, drop_none) for v in value]
    return value


def with_outputs(
    batch: Mapping[str, np.ndarray], texts: list[str], seconds_per_row: float = 0.0
) -> dict[str, np.ndarray]:
    """`batch` plus OUTPUT_COLUMNS for engines that make no tokens (baselines, replays)."""
    n = len(texts)
    out = dict(batch)
    out["generated_text"] = object_array(texts)
    out["num_input_tokens"] = np.zeros(n, dtype=np.int64)
    out["num_generated_tokens"] = np.zeros(n, dtype=np.int64)
    out["time_taken_llm"] = np.full(n, seconds_per_row)
    out["engine_error"] = object_array([None] * n)
    return out


def object_array(values: list[Any]) -> np.ndarray:
    """A 1-D object array, even of equal-length lists (numpy would stack them)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
