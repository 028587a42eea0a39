"""Request rows: ray.data.llm's message contract, and what the request key depends on."""

from __future__ import annotations

import base64

import numpy as np
import pyarrow as pa
import pytest

from geometry.answers import grammar_for
from pipelines.engines.prompts.requests import (
    SamplingConfig,
    add_requests,
    build_messages,
    png_bytes,
    request_key,
    sampling_params,
)


def _batch(image: bytes | None) -> pa.Table:
    return pa.table(
        {
            "item_id": ["U-PAP-PT-0001"],
            "setup": ["dotted" if image else "text"],
            "system_prompt": ["You are a geometry expert."],
            "prompt": ["Are AB and CD perpendicular?"],
            "image": pa.array([image], pa.binary()),
            "answer_type": ["choice"],
            "options": [["yes", "no"]],
        }
    )


def test_messages_put_the_image_before_the_question() -> None:
    messages = build_messages("sys", "question?", b"PNG")
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert [p["type"] for p in user] == ["image_url", "text"]
    image_url = user[0]["image_url"]["url"]
    assert base64.b64decode(image_url.removeprefix("data:image/png;base64,")) == b"PNG"
    assert user[1] == {"type": "text", "text": "question?"}
    assert [p["type"] for p in build_messages("sys", "q", None)[1]["content"]] == ["text"]


def test_sampling_params_carry_the_rows_grammar() -> None:
    cfg = SamplingConfig(temperature=0.0, max_tokens=64, seed=3)
    params = sampling_params(cfg, "choice", ["yes", "no"])
    assert params["structured_outputs"]["grammar"] == grammar_for("choice", ["yes", "no"])
    assert (params["temperature"], params["max_tokens"], params["seed"]) == (0.0, 64, 3)


def test_add_requests_adds_the_contract_columns() -> None:
    out = add_requests(_batch(b"PNG"), "m", "r", SamplingConfig()).to_pylist()[0]
    assert out["messages"][1]["content"][0]["type"] == "image_url"
    assert len(out["request_key"]) == 64
    assert out["sampling_params"]["structured_outputs"]["grammar"].startswith("root ::=")
    assert "image" not in out  # the messages carry it


def test_request_key_changes_with_every_input_it_names() -> None:
    params = sampling_params(SamplingConfig(), "choice", ["yes", "no"])
    base = ("I-1", "text", "m", "r", "sys", "q", None, params)
    key = request_key(*base)
    assert key == request_key(*base)
    variants = [
        ("I-2", "text", "m", "r", "sys", "q", None, params),
        ("I-1", "full", "m", "r", "sys", "q", None, params),
        ("I-1", "text", "m2", "r", "sys", "q", None, params),
        ("I-1", "text", "m", "r2", "sys", "q", None, params),
        ("I-1", "text", "m", "r", "sys2", "q", None, params),
        ("I-1", "text", "m", "r", "sys", "q", b"img", params),
        (
            "I-1",
            "text",
            "m",
            "r",
            "sys",
            "q",
            None,
            sampling_params(SamplingConfig(max_tokens=5), "choice", ["yes", "no"]),
        ),
        (
            "I-1",
            "text",
            "m",
            "r",
            "sys",
            "q",
            None,
            sampling_params(SamplingConfig(), "choice", ["no", "yes"]),
        ),
    ]
    keys = {request_key(*v) for v in variants}
    assert key not in keys and len(keys) == len(variants)


def test_null_or_empty_images_give_text_only_messages() -> None:
    for missing in (None, b""):
        out = add_requests(_batch(missing), "m", "r", SamplingConfig()).to_pylist()[0]
        assert [p["type"] for p in out["messages"][1]["content"]] == ["text"], missing
    assert png_bytes(np.float32("nan")) is None  # how Ray's numpy batches carry null blocks


def test_text_only_models_get_string_content_and_image_models_parts() -> None:
    text = build_messages("sys", "Are A, B, C collinear?", None, text_only=True)
    assert text == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Are A, B, C collinear?"},
    ]
    parts = build_messages("sys", "q", b"PNG", text_only=False)
    assert [p["type"] for p in parts[1]["content"]] == ["image_url", "text"]
    with pytest.raises(ValueError, match="text-only model cannot take image_url"):
        build_messages("sys", "q", b"PNG", text_only=True)
