"""A reasoning model's thinking, measured on its tokens: did a row run out of budget?

vLLM 0.29 enforces a thinking budget itself: with a reasoning parser named at engine start
(its `ReasoningConfig`) and `thinking_token_budget` in a request's sampling params, its
sampler counts the tokens after the start-of-reasoning marker (those the prompt already
holds included) and, when they reach the budget, forces the end-of-reasoning marker; the
answer grammar applies after it (`vllm/v1/sample/thinking_budget_state.py`). What comes back
does not say whether the end was forced, so it is recounted here, the same way, from the
prompt and output token ids of each row.

A row is out of budget when its reasoning reached the budget (the end was forced, or came
on the very last token allowed), when its reasoning never ended, or when the reply used all
its max_tokens: its answer is what was left room for, not the model's considered one.
Summaries count such rows apart and leave them out of accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.engines.models.model_fields import REASONING_END
from pipelines.engines.models.model_schema import ModelConfig

# Result column: the row ran out of its budget (null for models that do not reason).
OUT_OF_BUDGET = "out_of_budget"

# The start-of-reasoning text of each parser (vLLM's `reasoning_start_str`; tests/vllm
# checks the ones the configs use against vLLM's own parsers).
REASONING_START: dict[str, str] = {
    name: {"mistral": "[THINK]", "seed_oss": "<seed:think>"}.get(name, "<think>")
    for name in REASONING_END
}


@dataclass(frozen=True)
class ThinkingMarkers:
    """Token ids of a model's start- and end-of-reasoning markers."""

    start: tuple[int, ...]
    end: tuple[int, ...]


def markers_for(cfg: ModelConfig, tokenizer: Any) -> ThinkingMarkers | None:
    """The model's markers as its tokenizer encodes them (None: not a reasoning model)."""
    if not cfg.reasoning_parser:
        return None

    def ids(text: str) -> tuple[int, ...]:
        return tuple(int(i) for i in tokenizer.encode(text, add_special_tokens=False))

    return ThinkingMarkers(
        ids(REASONING_START[cfg.reasoning_parser]), ids(REASONING_END[cfg.reasoning_parser])
    )


def _last(seq: Sequence[int], part: tuple[int, ...]) -> int:
    """Index of the last occurrence of `part` in `seq`, -1 if none."""
    n = len(part)
    for i in range(len(seq) - n, -1, -1):
        if tuple(seq[i : i + n]) == part:
            return i
    return -1


def _first(seq: Sequence[int], part: tuple[int, ...]) -> int:
    n = len(part)
    for i in range(len(seq) - n + 1):
        if tuple(seq[i : i + n]) == part:
            return i
    return -1


def thinking_tokens(
    prompt: Sequence[int], output: Sequence[int], markers: ThinkingMarkers
) -> tuple[int, bool]:
    """(reasoning tokens, whether the reasoning ended) of one reply, counted as vLLM's
    budget counts them: tokens after the start marker, in the prompt and the output, up to
    the end marker."""
    count = 0
    in_prompt = _last(prompt, markers.start) > _last(prompt, markers.end)
    if in_prompt:
        count = len(prompt) - _last(prompt, markers.start) - len(markers.start)
        begin = 0
    else:
        start = _first(output, markers.start)
        if start < 0:
            return 0, False  # the model never started reasoning
        begin = start + len(markers.start)
    end = _first(output[begin:], markers.end)
    if end < 0:
        return count + len(output) - begin, False
    return count + end, True


def out_of_budget(
    prompt: Sequence[int],
    output: Sequence[int],
    markers: ThinkingMarkers,
    budget: int,
    max_tokens: int,
) -> bool:
    """Whether one reply ran out of its thinking budget or its max_tokens (module docstring)."""
    count, ended = thinking_tokens(prompt, output, markers)
    return (not ended and count > 0) or count >= budget or len(output) >= max_tokens
