"""The one row contract every engine shares (ray.data.llm's, so the GPU path is Ray's own).

In: `messages` (OpenAI chat format; content is one string for text-only models, else a list
of parts, `{"type": "text", "text": ...}` or `{"type": "image_url", "image_url": {"url":
"data:image/png;base64,..."}}`: see `chat_message`),
`sampling_params` (`temperature`, `max_tokens`, `seed`, `structured_outputs` =
`{"grammar": EBNF}`), plus `answer_type` and `options` from which HTTP engines derive a
JSON schema. Out: every input column, plus the ENGINE_OUTPUT columns, typed by that one
schema whatever the engine (the results schemas take their engine columns from it too). A row
that fails carries its message in `engine_error` and `generated_text` = None; it never fails
the batch.

Batches arrive in Ray Data's numpy format. Parts that went through Arrow carry the union of
all part keys (absent ones as None), so read parts with `.get()`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from store.records import null_if_nan

# What every engine adds to a row: ray.data.llm's vLLM stage adds the first four under these
# names, and our `engine_error` carries a failed row's message. `prompt_ids_sha256` is the
# digest of the prompt token ids the model was given (`prompt_ids_digest`), so runs of one
# model through different engines can be checked to have sent the same prompt; None where
# no model read tokens (baselines, replays) or the engine does not report them.
ENGINE_OUTPUT = pa.schema(
    [
        ("generated_text", pa.string()),
        ("num_input_tokens", pa.int64()),
        ("num_generated_tokens", pa.int64()),
        ("time_taken_llm", pa.float64()),
        ("engine_error", pa.string()),
        ("prompt_ids_sha256", pa.string()),
    ]
)
OUTPUT_COLUMNS: tuple[str, ...] = tuple(ENGINE_OUTPUT.names)


def prompt_ids_digest(ids: Iterable[Any] | None) -> str | None:
    """Hex SHA-256 of token ids written as decimal numbers joined by commas (None: none).

    Every engine hashes the ids the same way, whatever container they came in (a list, a
    numpy array from Ray, a tensor row converted with `.tolist()`).
    """
    if ids is None:
        return None
    text = ",".join(str(int(i)) for i in ids)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


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
    """A chat part holding a PNG as a base64 data URL."""
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


def text_part(text: str) -> dict[str, Any]:
    """A chat part holding text."""
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
    """`batch` plus ENGINE_OUTPUT for engines that make no tokens (replays, the solver)."""
    outputs = numpy_columns(ENGINE_OUTPUT, no_token_outputs(texts, seconds_per_row))
    return {**arrow_ready(batch), **outputs}


def no_token_outputs(texts: list[str], seconds_per_row: float) -> dict[str, list[Any]]:
    """ENGINE_OUTPUT values of an engine that answers without a model: no tokens, no errors."""
    n = len(texts)
    return {
        "generated_text": texts,
        "num_input_tokens": [0] * n,
        "num_generated_tokens": [0] * n,
        "time_taken_llm": [seconds_per_row] * n,
        "engine_error": [None] * n,
        "prompt_ids_sha256": [None] * n,
    }


def arrow_ready(batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`batch` with each list-valued column's cells as Python lists, as Arrow takes them back.

    Ray's numpy batches hold an Arrow list or struct column (`options`, `messages`) as an
    object array of numpy arrays or dicts of them; handed back so, Ray 2.60 cannot convert
    it, logs "Failed to convert column 'options' into pyarrow array (ArrowConversionError)"
    and stores it as pickled Python objects, which Parquet and polars cannot read as lists
    (tests/actors/test_contract.py). Python lists and dicts convert to the Arrow types.
    """
    out = dict(batch)
    for name, column in batch.items():
        if column.dtype == object and any(isinstance(v, np.ndarray | Mapping) for v in column):
            out[name] = object_array([plain(v) for v in column])
    return out


def numpy_columns(schema: pa.Schema, values: Mapping[str, list[Any]]) -> dict[str, np.ndarray]:
    """`schema`'s columns in Ray's numpy batch form, typed by the schema as far as numpy can.

    Numbers with no value missing become int64/float64 arrays; everything else stays Python
    objects, which Ray turns into the schema's Arrow type unless a block holds only None
    (then Ray makes it Arrow null: see `restore_types`).
    """
    out: dict[str, np.ndarray] = {}
    for field in schema:
        column = values[field.name]
        numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
        if numeric and all(v is not None for v in column):
            out[field.name] = np.array(column, dtype=field.type.to_pandas_dtype())
        else:
            out[field.name] = object_array(list(column))
    return out


def arrow_columns(batch: pa.Table, schema: pa.Schema, values: Mapping[str, list[Any]]) -> pa.Table:
    """`batch` with `schema`'s columns appended, each typed by the schema (Arrow engines)."""
    for field in schema:
        batch = batch.append_column(field, pa.array(values[field.name], field.type))
    return batch


def restore_types(batch: pa.Table, schema: pa.Schema) -> pa.Table:
    """Ray Data step (pyarrow, one block at a time): the columns `schema` names back to its
    types, after a step that saw the rows in numpy or Python form.

    Engines type their own columns (ENGINE_OUTPUT); this repairs only what Ray's numpy round
    trip changes (measured with Ray 2.60, tests/actors/test_contract.py): a block's all-null
    column comes back as Arrow null, or as float NaN after a second numpy step; an integer
    column holding a null comes back float64 with NaN; a list column holding a null or only
    empty lists comes back as pickled Python objects. Left alone, one block's schema would
    clash with its neighbours' when Ray joins them, and the Parquet shards would differ.
    """
    for field in schema:
        if field.name not in batch.column_names:
            continue
        column = batch.column(field.name)
        if column.type != field.type:
            values = [null_if_nan(plain(v)) for v in column.to_pylist()]
            index = batch.column_names.index(field.name)
            batch = batch.set_column(index, field, pa.array(values, field.type))
    return batch


def object_array(values: list[Any]) -> np.ndarray:
    """A 1-D object array, even of equal-length lists (numpy would stack them)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
