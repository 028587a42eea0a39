"""Helpers of the http engine tests (test_http_engine.py, test_http_key.py): a batch as the
stage hands it over, the key of the scripted server, the stage recorded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from ray.data.block import BlockAccessor

from actors.contract import image_part, text_part
from actors.http_engine import HTTPEngine
from geometry.answers import grammar_for

KEY_ENV = "GEOSEE_TEST_API_KEY"

KEY = "sk-test-9f8e7d6c5b4a-never-leak"


def fast_engine(base_url: str, model: str = "m", **kwargs: Any) -> HTTPEngine:
    """An engine with tiny backoff, so retry tests take milliseconds."""
    return HTTPEngine(base_url, model, backoff_s=0.001, timeout_s=5.0, **kwargs)


def make_batch(
    prompts: list[str], answer_type: str = "choice", image: bool = False
) -> dict[str, np.ndarray]:
    """Rows in the numpy format Ray Data hands over after Arrow (None-filled part keys)."""
    rows = []
    options = ["yes", "no"] if answer_type == "choice" else []
    for i, prompt in enumerate(prompts):
        user = [image_part(b"\x89PNG fake"), text_part(prompt)] if image else [text_part(prompt)]
        rows.append(
            {
                "request_key": f"k{i}",
                "messages": [
                    {"role": "system", "content": [text_part("Answer in JSON.")]},
                    {"role": "user", "content": user},
                ],
                "sampling_params": {
                    "temperature": 0.0,
                    "max_tokens": 32,
                    "seed": 7,
                    # As pipelines/engines/prompts/requests.py builds them: the bounded grammar
                    # rides along.
                    "structured_outputs": {"grammar": grammar_for(answer_type, options)},
                },
                "answer_type": answer_type,
                "options": options,
            }
        )
    batch = BlockAccessor.for_block(pa.Table.from_pylist(rows)).to_numpy()
    assert isinstance(batch, dict)
    return batch


def _recorded_stage(monkeypatch: pytest.MonkeyPatch, key: str | None) -> dict[str, Any]:
    """The map_batches arguments http_stage gives Ray, with $KEY_ENV set to `key`."""
    from pipelines.engines.models.model_schema import ModelConfig
    from pipelines.engines.stages.engine_stages import http_stage
    from pipelines.engines.stages.options import EngineOptions

    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    recorded: dict[str, Any] = {}

    class Recorder:
        def map_batches(self, fn: Any, **kwargs: Any) -> Recorder:
            recorded.update(kwargs)
            return self

    cfg = ModelConfig(
        name="served", repo="tiny", engine="http", api_base="http://x/v1", api_key_env=KEY_ENV
    )
    http_stage(Recorder(), cfg, EngineOptions())
    return recorded


# What each poisoned reply (loopback_server.POISON_KINDS) must become: the row's error
# prefix, or None where the row keeps its answer (checked and normalised).
POISON_OUTCOMES: dict[str, str | None] = {
    "lone_surrogate": None,
    "tokens_beyond_int64": None,
    "nan_usage": None,
    "inf_usage": None,
    "negative_usage": None,
    "usage_wrong_types": None,
    "usage_not_an_object": None,
    "long_text": None,
    "content_a_number": "final: unreadable completion after 1 attempt: content is a int",
    "content_a_list": "final: unreadable completion after 1 attempt: content is a list",
    "refusal": "final: completion without text after 1 attempt: refusal: I will not",
    "missing_choices": "final: unreadable completion after 1 attempt: choices is missing",
    "empty_choices": "final: unreadable completion after 1 attempt: choices is an empty list",
    "choices_a_string": "final: unreadable completion after 1 attempt: choices is a str",
    "message_missing": "final: unreadable completion after 1 attempt: choices[0].message is "
    "missing",
    "json_array": "final: unreadable completion after 1 attempt: JSON list, not an object",
    "nested_too_deep": "final: reply not JSON after 1 attempt: ",
    "digits_beyond_parser": None,  # in a field no rule reads: the answer is kept
    "usage_5000_digits": None,  # stored as 0, the answer kept
    "bom_before_body": None,
    "not_utf8": "final: reply not UTF-8 after 1 attempt: ",
    "not_json": "final: reply not JSON after 1 attempt: ",
    "huge_body": "final: reply too large after 1 attempt: over 8388608 bytes",
    "empty_body": "transient: empty reply after 3 attempts: HTTP 200 with no body",
    "html_page": "transient: HTML page instead of a completion after 3 attempts: 502 Bad Gateway",
    "status_408": "transient: HTTP 408 after 3 attempts",
    "status_409": "transient: HTTP 409 after 3 attempts",
    "status_425": "transient: HTTP 425 after 3 attempts",
}

ANSWER = '{"answer": "yes"}'
