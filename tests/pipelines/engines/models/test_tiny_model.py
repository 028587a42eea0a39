"""`python -m pipelines tiny-model`: offline, small, seeded, loadable by the Auto classes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from geometry.answers import grammar_for
from pipelines.cli import main
from pipelines.engines.models.tiny_model import build_tiny_model

MAX_BYTES = 20 * 1024 * 1024


def _size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def test_cli_builds_a_loadable_llm(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    out = tmp_path / "llm"
    assert main(["tiny-model", "--kind", "llm", "--out", str(out)]) == 0
    assert _size(out) < MAX_BYTES
    tokenizer = AutoTokenizer.from_pretrained(out, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(out, local_files_only=True)
    assert model.config.max_position_embeddings >= 2048
    assert model.get_output_embeddings().weight.shape[0] == len(tokenizer)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Is ABC acute?"}], add_generation_prompt=True, tokenize=False
    )
    assert "Is ABC acute?" in prompt


def test_cli_builds_a_loadable_image_text_model(tmp_path: Path) -> None:
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    torch.set_num_threads(1)
    out = tmp_path / "vlm"
    assert main(["tiny-model", "--kind", "vlm", "--out", str(out)]) == 0
    assert _size(out) < MAX_BYTES
    processor = AutoProcessor.from_pretrained(out, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(out, local_files_only=True)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Hi"}]}]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    inputs = processor(text=[prompt], images=[Image.new("RGB", (50, 30))], return_tensors="pt")
    image_id = model.config.image_token_id
    assert int((inputs["input_ids"] == image_id).sum()) == model.config.image_seq_length
    with torch.inference_mode():
        logits = model(**inputs).logits
    assert logits.shape[-1] == len(processor.tokenizer)


def test_every_grammar_string_round_trips_through_the_tokenizer(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        build_tiny_model("llm", tmp_path), local_files_only=True
    )
    texts = [
        '{"answer": "bisector"}',
        '{"x": -12.25, "y": 3}',
        "é ∠ABC ≤ 90°",
        grammar_for("point"),
    ]
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text


def test_same_seed_same_files_other_seed_other_weights(tmp_path: Path) -> None:
    a = build_tiny_model("llm", tmp_path / "a", seed=3)
    b = build_tiny_model("llm", tmp_path / "b", seed=3)
    c = build_tiny_model("llm", tmp_path / "c", seed=4)
    for name in ("model.safetensors", "tokenizer.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()


def test_building_leaves_the_global_rng_alone(tmp_path: Path) -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_tiny_model("llm", tmp_path, seed=0)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    "args",
    [["--kind", "gpt", "--out", "{tmp}/x"], ["--kind", "llm", "--out", "{tmp}"]],
    ids=["unknown-kind", "non-empty-out"],
)
def test_bad_input_exits_2(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "existing.txt").write_text("keep me")
    argv = ["tiny-model", *(a.format(tmp=tmp_path) for a in args)]
    assert main(argv) == 2
    assert not (tmp_path / "x").exists()
