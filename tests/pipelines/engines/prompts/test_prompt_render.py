"""What the hf engine's chat template really renders for the rows `add_requests` builds.

For every tiny family (text LM with a string-only template, Llava VLM with parts): the
question text is in the prompt, image rows carry exactly the processor's image tokens and
text rows none, and no Python or numpy repr leaks into it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from actors.hf_engine import HFEngine
from geometry.items import build_items
from geometry.render import render_png
from pipelines.engines.models.tiny_model import IMAGE, IMAGE_SIZE, PATCH_SIZE
from pipelines.engines.prompts.requests import SamplingConfig, add_requests
from pipelines.noregeo.generate import item_table

TASK = "C-BCT-CT"
# What a message list or numpy array looks like when a template prints it as a string.
LEAKS = ("<ndarray>", "[{'type'", '[{"type"', "array(", "'image_url'", "data:image")


def _requests(setups: list[str], text_only: bool) -> list[dict[str, Any]]:
    """Request rows of two items per setup, as the pipeline builds them, through Arrow and
    back into numpy the way Ray hands them to the engine."""
    items = item_table(build_items(TASK, 2, 0, setups, 64, render_png))
    table = add_requests(items, "tiny", "local", SamplingConfig(), text_only=text_only)
    # Ray's numpy batches hold list columns as numpy arrays: the shape the engine sees.
    messages = table.select(["messages"]).to_pandas()["messages"]
    return [
        {"prompt": table["prompt"][i].as_py(), "setup": table["setup"][i].as_py(), "m": m}
        for i, m in enumerate(messages)
    ]


@pytest.fixture(scope="module")
def llm(tiny_llm_dir: Path) -> HFEngine:
    torch.set_num_threads(1)
    return HFEngine(str(tiny_llm_dir))


@pytest.fixture(scope="module")
def vlm(tiny_vlm_dir: Path) -> HFEngine:
    torch.set_num_threads(1)
    return HFEngine(str(tiny_vlm_dir))


def _image_token_count(engine: HFEngine, prompt: str, images: list[Any]) -> int:
    ids = engine.renderer.encode([prompt], [images])["input_ids"][0].tolist()
    return ids.count(engine.tokenizer.convert_tokens_to_ids(IMAGE))


def test_text_lm_prompt_holds_the_question_and_no_repr(llm: HFEngine) -> None:
    rows = _requests(["text"], text_only=True)
    assert rows
    for row in rows:
        prompt, images = llm.render_prompt(row["m"])
        assert row["prompt"] in prompt
        assert images == []
        assert not [leak for leak in LEAKS if leak in prompt], prompt
        assert _image_token_count(llm, prompt, images) == 0


def test_vlm_prompt_holds_the_question_and_the_processors_image_tokens(vlm: HFEngine) -> None:
    rows = _requests(["text", "dotted", "full"], text_only=False)
    # One image is (32 / 8)^2 patch features, the count the model's projector emits.
    expected = (IMAGE_SIZE // PATCH_SIZE) ** 2
    assert vlm.model.config.image_seq_length == expected
    seen = set()
    for row in rows:
        prompt, images = vlm.render_prompt(row["m"])
        seen.add(row["setup"])
        assert row["prompt"] in prompt
        assert not [leak for leak in LEAKS if leak in prompt], prompt
        want = 0 if row["setup"] == "text" else expected
        assert len(images) == (0 if row["setup"] == "text" else 1)
        assert _image_token_count(vlm, prompt, images) == want, row["setup"]
    assert seen == {"text", "dotted", "full"}


def test_parts_fed_to_the_string_only_template_would_leak_a_repr(llm: HFEngine) -> None:
    """The check above can fail: the text LM's template prints a list of parts as its repr."""
    row = _requests(["text"], text_only=False)[0]  # parts, as an image-text model gets them
    chat = [{"role": m["role"], "content": m["content"]} for m in row["m"]]
    prompt = llm.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert [leak for leak in LEAKS if leak in prompt]
