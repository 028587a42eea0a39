"""What the http engine keeps of a 200 reply: the prompt token ids a vLLM server reports are
kept as their digest only when they are a list of token ids (anything else costs the row
its digest, never its answer); bad usage counts are 0 and the answer kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.contract import prompt_ids_digest
from actors.http_reply import MAX_PROMPT_IDS, read_completion
from tests.actors.loopback_server import completion_body


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


def test_a_usage_count_of_thousands_of_digits_is_stored_as_0_and_the_answer_kept() -> None:
    # Issue 38: Python refuses to convert over 4,300 digits, and the reply was "not JSON".
    body = completion_body('{"answer": 1}', {"prompt_tokens": 7, "completion_tokens": 2})
    body = body.replace(b'"prompt_tokens": 7', b'"prompt_tokens": ' + b"9" * 5000)
    completion = read_completion(body, "application/json")
    assert completion.text == '{"answer": 1}'
    assert (completion.input_tokens, completion.output_tokens) == (0, 2)


def test_a_byte_order_mark_before_a_valid_body_is_read() -> None:
    body = b"\xef\xbb\xbf" + completion_body('{"answer": 1}', {"prompt_tokens": 3})
    assert read_completion(body, "application/json").input_tokens == 3
