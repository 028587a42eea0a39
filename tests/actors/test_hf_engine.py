"""The hf engine on the tiny random models: grammars, images, errors, determinism."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from actors.contract import OUTPUT_COLUMNS, image_part, text_part
from actors.hf_engine import HFEngine
from geometry.answers import grammar_for, parse_answer
from pipelines.engines.models.tiny_model import build_tiny_model

ANSWER_TYPES: list[tuple[str, list[str]]] = [
    ("choice", ["yes", "no"]),
    ("choice", ["median", "altitude", "bisector"]),
    ("number", []),
    ("point", []),
]
MAX_TOKENS = 64


@pytest.fixture(scope="module")
def llm(tiny_llm_dir: Path) -> HFEngine:
    torch.set_num_threads(1)
    return HFEngine(str(tiny_llm_dir), batch_size=4)


@pytest.fixture(scope="module")
def vlm(tiny_vlm_dir: Path) -> HFEngine:
    torch.set_num_threads(1)
    return HFEngine(str(tiny_vlm_dir), batch_size=4)


def _png(color: tuple[int, int, int], size: tuple[int, int] = (48, 40)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def _objects(values: list[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _row(
    k: int,
    answer_type: str,
    options: list[str],
    *,
    image: bytes | None = None,
    url: str | None = None,
    max_tokens: int = MAX_TOKENS,
    **params: Any,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [text_part(f"Question {k}: A=({k},{-k}). Answer.")]
    if image is not None:
        content.insert(0, image_part(image))
    if url is not None:
        content.insert(0, {"type": "image_url", "image_url": {"url": url}})
    return {
        "request_key": f"key-{k}",
        "messages": [
            {"role": "system", "content": "Answer with JSON only."},
            {"role": "user", "content": content},
        ],
        "sampling_params": {
            "temperature": 0.0,
            "max_tokens": max_tokens,
            "structured_outputs": {"grammar": grammar_for(answer_type, options)},
            **params,
        },
        "answer_type": answer_type,
        "options": options,
    }


def _batch(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    return {column: _objects([r[column] for r in rows]) for column in rows[0]}


def _mixed_rows(n: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [_row(k, *ANSWER_TYPES[k % len(ANSWER_TYPES)], **kwargs) for k in range(n)]


def _assert_all_valid(out: dict[str, np.ndarray], rows: list[dict[str, Any]]) -> None:
    for i, row in enumerate(rows):
        assert out["engine_error"][i] is None, out["engine_error"][i]
        parsed = parse_answer(out["generated_text"][i], row["answer_type"], row["options"])
        assert parsed.valid, (out["generated_text"][i], parsed.error)
        # Bounded grammars end the row, long before max_tokens and without needing EOS.
        assert 0 < out["num_generated_tokens"][i] < MAX_TOKENS
        assert out["num_input_tokens"][i] > 0
        assert out["time_taken_llm"][i] > 0


def test_text_rows_with_mixed_grammars_all_parse(llm: HFEngine) -> None:
    rows = _mixed_rows(12)
    out = llm(_batch(rows))
    assert set(OUTPUT_COLUMNS) <= set(out)
    assert list(out["request_key"]) == [r["request_key"] for r in rows]  # inputs pass through
    _assert_all_valid(out, rows)
    # Each distinct grammar string was compiled once, not once per row.
    assert len(llm.grammars) == len(ANSWER_TYPES)


def test_image_rows_all_parse(vlm: HFEngine) -> None:
    colors = [(255, 255, 255), (0, 0, 0), (200, 30, 30), (30, 30, 200)]
    rows = [
        _row(k, *ANSWER_TYPES[k % 4], image=_png(colors[k % 4], (32 + 8 * k, 40))) for k in range(8)
    ]
    out = vlm(_batch(rows))
    _assert_all_valid(out, rows)
    # The 16 image tokens count as input tokens.
    assert min(out["num_input_tokens"]) > 16


def test_two_runs_give_the_same_outputs(llm: HFEngine, vlm: HFEngine) -> None:
    rows = _mixed_rows(6)
    assert list(llm(_batch(rows))["generated_text"]) == list(llm(_batch(rows))["generated_text"])
    image_rows = _mixed_rows(4, image=_png((10, 200, 10)))
    first = vlm(_batch(image_rows))["generated_text"]
    assert list(first) == list(vlm(_batch(image_rows))["generated_text"])


def test_left_padding_does_not_change_answers(tiny_llm_dir: Path) -> None:
    # Prompts of very different lengths share a sub-batch only through left padding.
    rows = _mixed_rows(8)
    for k, row in enumerate(rows):
        row["messages"][1]["content"] = [text_part("A=(1,2) " * (1 + 9 * k))]
    alone = HFEngine(str(tiny_llm_dir), batch_size=1)(_batch(rows))
    padded = HFEngine(str(tiny_llm_dir), batch_size=8)(_batch(rows))
    assert list(alone["generated_text"]) == list(padded["generated_text"])


@pytest.mark.parametrize(
    "url",
    [
        "data:image/png;base64,!!not-base64!!",
        "data:image/png;base64,aGVsbG8gd29ybGQ=",  # valid base64, not an image
        "https://example.com/figure.png",
    ],
)
def test_broken_image_fails_only_its_row(vlm: HFEngine, url: str) -> None:
    rows = _mixed_rows(4, image=_png((255, 255, 255)))
    rows[1] = _row(1, *ANSWER_TYPES[1], url=url)
    out = vlm(_batch(rows))
    assert out["generated_text"][1] is None
    assert "image" in out["engine_error"][1]
    _assert_all_valid(
        {c: np.delete(v, 1) for c, v in out.items()}, [r for i, r in enumerate(rows) if i != 1]
    )


def test_too_small_max_tokens_gives_invalid_json_without_error(llm: HFEngine) -> None:
    rows = [_row(k, "point", [], max_tokens=3) for k in range(3)]
    out = llm(_batch(rows))
    for i in range(3):
        assert out["engine_error"][i] is None
        assert out["num_generated_tokens"][i] == 3
        assert not parse_answer(out["generated_text"][i], "point").valid


SHORT_CONTEXT = 96


@pytest.fixture(scope="module")
def short_llm(tmp_path_factory: pytest.TempPathFactory) -> HFEngine:
    """The tiny LM with a 96-position context: prompts of the test rows leave it some room."""
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("short_llm")
    return HFEngine(str(build_tiny_model("llm", path, max_positions=SHORT_CONTEXT)), batch_size=4)


def test_max_tokens_is_clamped_to_the_context_the_prompt_leaves(short_llm: HFEngine) -> None:
    # The default max_tokens (2,048) is far more than the context: each row gets what its
    # prompt leaves, and no error. Without a grammar the random model runs to that limit.
    rows = [_row(k, "number", [], max_tokens=2048) for k in range(3)]
    for row in rows:
        row["sampling_params"]["structured_outputs"] = None
    rows[1]["messages"][1]["content"] = [text_part("A=(1,2) " * 6)]  # a longer prompt
    out = short_llm(_batch(rows))
    assert list(out["engine_error"]) == [None] * 3
    for i in range(3):
        used = out["num_input_tokens"][i] + out["num_generated_tokens"][i]
        assert used <= SHORT_CONTEXT
    assert len({int(n) for n in out["num_input_tokens"]}) > 1  # rows had different rooms


def test_grammar_rows_stay_valid_under_a_clamped_max_tokens(short_llm: HFEngine) -> None:
    rows = _mixed_rows(4, max_tokens=2048)
    out = short_llm(_batch(rows))
    _assert_all_valid(out, rows)


def test_prompt_that_fills_the_context_fails_only_its_row(short_llm: HFEngine) -> None:
    rows = _mixed_rows(3)
    rows[0]["messages"][1]["content"] = [text_part("a, b; " * SHORT_CONTEXT)]
    out = short_llm(_batch(rows))
    assert "positions" in out["engine_error"][0]
    assert f"{SHORT_CONTEXT} positions" in out["engine_error"][0]
    assert out["generated_text"][0] is None
    assert parse_answer(out["generated_text"][2], *ANSWER_TYPES[2]).valid


def test_text_model_rejects_image_rows(llm: HFEngine) -> None:
    rows = [_row(0, "number", [], image=_png((0, 0, 0))), _row(1, "number", [])]
    out = llm(_batch(rows))
    assert "text model" in out["engine_error"][0]
    assert out["engine_error"][1] is None


def test_sampling_follows_the_row_seed(llm: HFEngine) -> None:
    rows = [_row(0, "point", [], temperature=1.0, seed=seed) for seed in range(8)]
    first = list(llm(_batch(rows))["generated_text"])
    assert first == list(llm(_batch(rows))["generated_text"])
    assert len(set(first)) > 1  # different seeds draw different answers
    assert all(parse_answer(text, "point").valid for text in first)


def test_row_without_grammar_stops_at_max_tokens_or_eos(llm: HFEngine) -> None:
    row = _row(0, "number", [], max_tokens=8)
    row["sampling_params"]["structured_outputs"] = None
    out = llm(_batch([row]))
    assert out["engine_error"][0] is None
    assert 1 <= out["num_generated_tokens"][0] <= 8


def test_missing_column_names_the_step(llm: HFEngine) -> None:
    with pytest.raises(KeyError, match="HFEngine"):
        llm({"messages": _objects([[]])})


@pytest.mark.slow
def test_runs_as_a_ray_actor_pool(tiny_llm_dir: Path) -> None:
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        rows = _mixed_rows(8)
        ds = ray.data.from_items(rows).map_batches(
            HFEngine,
            fn_constructor_kwargs={"model": str(tiny_llm_dir)},
            batch_size=4,
            concurrency=1,
            batch_format="numpy",
        )
        out = sorted(ds.take_all(), key=lambda r: r["request_key"])
    finally:
        if started:
            ray.shutdown()
    by_key = {r["request_key"]: r for r in rows}
    for got in out:
        want = by_key[got["request_key"]]
        assert got["engine_error"] is None
        assert parse_answer(got["generated_text"], want["answer_type"], want["options"]).valid


def test_string_content_puts_one_image_token_before_the_text(tiny_vlm_dir: Path) -> None:
    """chat_template_content_format "string", as vLLM builds it (placeholder first, then
    the text, joined by a newline): same image token count and question as "openai"."""
    from actors.hf_engine import PromptRenderer

    messages = [
        {"role": "system", "content": [text_part("Be brief.")]},
        {"role": "user", "content": [image_part(_png((9, 9, 9))), text_part("Which is larger?")]},
    ]
    rendered = {
        fmt: PromptRenderer.load(str(tiny_vlm_dir), content_format=fmt).render(messages)
        for fmt in ("openai", "string")
    }
    string_prompt, string_images = rendered["string"]
    assert "<|user|><image>\nWhich is larger?" in string_prompt
    for prompt, images in rendered.values():
        assert prompt.count("<image>") == len(images) == 1
        assert "Be brief." in prompt and "Which is larger?" in prompt
    with pytest.raises(ValueError, match="content_format"):
        PromptRenderer.load(str(tiny_vlm_dir), content_format="html")


@pytest.mark.parametrize("fmt", ["openai", "string"])
def test_system_as_string_hands_the_template_one_system_string(fmt: str) -> None:
    """ModelConfig.system_prompt_as_string: the system message's text parts joined by a
    newline (as Ray's prepare-multimodal stage extracts it, apply_sys_msg_formatting), the
    other messages as the content format has them; off, the system message is like them."""
    from actors.hf_engine import PromptRenderer

    class Templater:
        """Records the conversation apply_chat_template is given."""

        image_token = "<image>"

        def __init__(self) -> None:
            self.chats: list[list[dict[str, Any]]] = []

        def apply_chat_template(
            self, chat: list[dict[str, Any]], add_generation_prompt: bool, tokenize: bool
        ) -> str:
            self.chats.append(chat)
            return ""

    templater = Templater()
    messages = [
        {"role": "system", "content": [text_part("Be brief."), text_part("Use JSON.")]},
        {"role": "user", "content": [text_part("Which is larger?")]},
    ]
    for as_string in (False, True):
        PromptRenderer("m", templater, templater, None, fmt, as_string).render(messages)
    plain, joined = templater.chats
    assert joined[0] == {"role": "system", "content": "Be brief.\nUse JSON."}
    assert joined[1] == plain[1]  # the user turn is untouched
    assert plain[0]["content"] == (
        [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Use JSON."}]
        if fmt == "openai"
        else "Be brief.\nUse JSON."
    )
