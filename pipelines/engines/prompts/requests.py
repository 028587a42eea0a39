"""Item rows -> request rows in ray.data.llm's contract (pure functions, tested on CPU).

The request key identifies a request for resume and caching: sha256 of the item and setup,
model and revision, the messages (images by their sha256), the sampling params and the
grammar. The item ID is part of it because two items may ask the very same question, and
each must keep its own result row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from actors.contract import chat_message, check_columns, image_part, text_part
from geometry.answers import grammar_for
from pipelines.command_line.args import (
    max_tokens_int,
    seed_int,
    temperature_float,
)
from pipelines.engines.models.model_schema import ModelConfig

# Sampling fields that only some models set (their authors' advice, a thinking budget): left
# out of the dumps while unset, so request keys and settings records of every other model
# stay what they were before these fields existed.
OPTIONAL_SAMPLING = ("top_p", "top_k", "min_p", "thinking_token_budget")

ITEM_COLUMNS_NEEDED = (
    "item_id",
    "setup",
    "system_prompt",
    "prompt",
    "image",
    "answer_type",
    "options",
)


class SamplingConfig(BaseModel):
    """What a run asks of the engine, the same for NoReGeo and GeoBuild; every field goes
    into the request key, and the results folder's settings record."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    temperature: float = Field(default=0.0, ge=0.0, description="sampling temperature")
    max_tokens: int = Field(default=2048, ge=1, description="tokens generated at most")
    seed: int = Field(default=0, ge=0, description="sampling seed")
    top_p: float | None = Field(default=None, gt=0.0, le=1.0, description="nucleus mass")
    top_k: int | None = Field(default=None, ge=1, description="keep the k likeliest tokens")
    min_p: float | None = Field(default=None, ge=0.0, le=1.0, description="min-p cut-off")
    thinking_token_budget: int | None = Field(
        default=None, ge=0, description="reasoning tokens before vLLM forces their end"
    )

    @model_serializer(mode="wrap")
    def _without_unset_options(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if k not in OPTIONAL_SAMPLING or v is not None}

    def for_model(self, cfg: ModelConfig) -> SamplingConfig:
        """The run's sampling as `cfg` must be asked: its authors' sampling (which replaces
        the run's temperature: Qwen3 and the R1 distills repeat themselves endlessly when
        greedy) and its thinking budget. Unchanged for every other model."""
        update: dict[str, Any] = {}
        if cfg.sampling is not None:
            update = {k: v for k, v in cfg.sampling.model_dump().items() if v is not None}
        if cfg.reasoning_parser and cfg.thinking_max_tokens:
            update["thinking_token_budget"] = cfg.thinking_max_tokens
        return self.model_copy(update=update) if update else self

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SamplingConfig:
        """The sampling `add_sampling_arguments` read from the command line."""
        return cls(
            temperature=args.temperature, max_tokens=args.max_tokens, seed=args.sampling_seed
        )


# NoReGeo's temperature help: its paper states both values.
NOREGEO_TEMPERATURE_HELP = "sampling temperature; 0 is greedy (the paper states both 0 and 0.6)"
MAX_TOKENS_HELP = "tokens a reply may have at most (clamped to what the context leaves)"


def add_sampling_arguments(
    parser: argparse.ArgumentParser,
    temperature_help: str = NOREGEO_TEMPERATURE_HELP,
    max_tokens_help: str = MAX_TOKENS_HELP,
    max_tokens_default: int | None = SamplingConfig.model_fields["max_tokens"].default,
) -> None:
    """`--temperature`, `--max-tokens`, `--sampling-seed`: one definition for every command
    that asks a model (evaluate, geobuild, sweep), defaults from SamplingConfig. The flag says
    which seed it is (items have `--item-seed`); the field stays `seed`, as request keys and
    settings.json have it. GeoBuild gives its own help (its benchmark is not NoReGeo's) and
    a max-tokens default of None, which its settings resolve per protocol."""
    fields = SamplingConfig.model_fields
    parser.add_argument(
        "--temperature",
        type=temperature_float,
        default=fields["temperature"].default,
        help=temperature_help,
    )
    parser.add_argument(
        "--max-tokens", type=max_tokens_int, default=max_tokens_default, help=max_tokens_help
    )
    parser.add_argument(
        "--sampling-seed",
        type=seed_int,
        default=fields["seed"].default,
        help="the engine's sampling seed (part of every request key)",
    )


def build_messages(
    system_prompt: str, prompt: str, image: bytes | None, text_only: bool = False
) -> list[dict[str, Any]]:
    """OpenAI chat messages; the image (if any) comes before the question, as one part.

    `text_only` models get string content (see `actors.contract.chat_message`).
    """
    user: list[dict[str, Any]] = [image_part(image)] if image is not None else []
    user.append(text_part(prompt))
    return [
        chat_message("system", [text_part(system_prompt)], text_only),
        chat_message("user", user, text_only),
    ]


def sampling_params(cfg: SamplingConfig, answer_type: str, options: list[str]) -> dict[str, Any]:
    """A request's sampling params: the run's sampling and the answer type's grammar."""
    grammar = grammar_for(answer_type, options)
    return {**cfg.model_dump(), "structured_outputs": {"grammar": grammar}}


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
    """sha256 naming one request: item, setup, model, revision, messages, sampling, grammar."""
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
    batch: pa.Table,
    model: str,
    revision: str,
    sampling: SamplingConfig,
    with_messages: bool = True,
    text_only: bool = False,
) -> pa.Table:
    """Ray Data step (pyarrow batches): item rows in; `request_key`, `messages` and
    `sampling_params` added; the image dropped (the messages carry it). `text_only` models
    get string content.

    Engines that never read the messages (the answer baselines) skip them: base64 images
    are most of a row's bytes. The request key does not depend on them either way.
    """
    check_columns(batch.column_names, ITEM_COLUMNS_NEEDED, "add_requests")
    cols = {name: batch.column(name).to_pylist() for name in ITEM_COLUMNS_NEEDED}
    keys, messages, params = [], [], []
    for i in range(batch.num_rows):
        image = png_bytes(cols["image"][i])
        p = sampling_params(sampling, cols["answer_type"][i], list(cols["options"][i] or []))
        system, prompt = cols["system_prompt"][i], cols["prompt"][i]
        item, setup = cols["item_id"][i], cols["setup"][i]
        keys.append(request_key(item, setup, model, revision, system, prompt, image, p))
        if with_messages:
            messages.append(build_messages(system, prompt, image, text_only))
        params.append(p)
    out = batch.drop_columns(["image"])
    out = out.append_column("request_key", pa.array(keys, pa.string()))
    if with_messages:
        out = out.append_column("messages", pa.array(messages))
    return out.append_column("sampling_params", pa.array(params))
