"""The prompt token ids a vLLM server reports are kept as their digest only when they are a
list of token ids; anything else costs the row its digest, never its answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.contract import prompt_ids_digest
from actors.http_reply import MAX_PROMPT_IDS, read_completion


def _reply(ids: Any) -> bytes:
    body = {"choices": [{"message": {"content": '{"answer": "A"}'}}], "prompt_token_ids": ids}
    return json.dumps(body).encode()


def test_a_list_of_ids_is_kept_as_its_digest() -> None:
    completion = read_completion(_reply([1, 2, 30000]), "application/json")
    assert completion.prompt_ids_sha256 == prompt_ids_digest([1, 2, 30000])
    assert completion.text == '{"answer": "A"}'


@pytest.mark.parametrize(
    "ids",
    [
        None,
        "1,2",
        [1, "2"],
        [1, -2],
        [1, 2.0],
        [True],
        [2**63],
        {"a": 1},
        [0] * (MAX_PROMPT_IDS + 1),
    ],
)
def test_anything_else_keeps_the_answer_without_a_digest(ids: Any) -> None:
    completion = read_completion(_reply(ids), "application/json")
    assert completion.prompt_ids_sha256 is None
    assert completion.text == '{"answer": "A"}'
