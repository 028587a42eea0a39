"""The original-layout LLaVA-1.5 conversion (pipelines/engines/models/llava_convert.py) held
against a forward pass written here from the original architecture's definition, on the
original tensors, with a tiny random checkpoint in the published layout
(tests/tiny_llava_original.py).

The reference follows haotian-liu/LLaVA step by step: `expand2square` in the CLIP mean colour
(mm_utils.py:152-182), CLIP preprocessing, `hidden_states[mm_vision_select_layer]` without
the CLS position (clip_encoder.py:35-57), the mlp2x_gelu projector (builder.py:39-46), the
prompt tokenised chunk by chunk around `<image>` (mm_utils.py:185-204) and the image features
spliced there (llava_arch.py:145-324), then the Llama LM. Conversions broken on purpose (no
projector, another layer, no padding) must not match it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pipelines.engines.models import llava_convert
from pipelines.engines.models.llava_conversations import VICUNA_SYSTEM
from pipelines.engines.models.llava_original import RECORD

QUESTION = "Are the points A=(1,2), B=(2,4) and C=(3,6) collinear?"


# Every test converts into a cache of its own (conftest.py).
pytestmark = pytest.mark.usefixtures("cache")


@pytest.fixture(scope="module")
def image() -> Any:
    """A wide, busy image: padding it to a square changes what CLIP sees."""
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, size=(40, 90, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def expand2square(image: Any, background: tuple[int, ...]) -> Any:
    """LLaVA llava/mm_utils.py:152-163, as written there."""
    from PIL import Image

    width, height = image.size
    if width == height:
        return image
    if width > height:
        result = Image.new(image.mode, (width, width), background)
        result.paste(image, (0, (width - height) // 2))
        return result
    result = Image.new(image.mode, (height, height), background)
    result.paste(image, ((height - width) // 2, 0))
    return result


def vicuna_v1_prompt(question: str) -> str:
    """conv_vicuna_v1.get_prompt() for one image question (LLaVA conversation.py:32-107,
    242-252; `<image>\\n` first as model_vqa_loader.py:43-46 puts it)."""
    return f"{VICUNA_SYSTEM} USER: <image>\n{question} ASSISTANT:"


def reference_logits(folder: Path, image: Any, question: str) -> tuple[Any, list[int]]:
    """Logits of the original model, from its own tensors; and its input ids (-200 where
    the image goes)."""
    import torch
    import torch.nn.functional as F
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        CLIPVisionModel,
        LlamaConfig,
        LlamaForCausalLM,
    )

    config = json.loads((folder / "config.json").read_text())
    tensors: dict[str, Any] = {}
    for shard in sorted(folder.glob("pytorch_model-*.bin")):
        tensors.update(torch.load(shard, weights_only=True))
    tensors = {k: t.float() for k, t in tensors.items()}
    # The tower comes from its own folder, as CLIPVisionTower.load_model loads it.
    tower_path = config["mm_vision_tower"]
    tower = CLIPVisionModel.from_pretrained(tower_path).eval()
    clip = CLIPImageProcessor.from_pretrained(tower_path)
    if config["image_aspect_ratio"] == "pad":
        image = expand2square(image, tuple(int(x * 255) for x in clip.image_mean))
    pixels = clip.preprocess(image, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        hidden = tower(pixels, output_hidden_states=True).hidden_states
        features = hidden[config["mm_vision_select_layer"]]
        assert config["mm_vision_select_feature"] == "patch"
        features = features[:, 1:]
        w0, b0 = tensors["model.mm_projector.0.weight"], tensors["model.mm_projector.0.bias"]
        w2, b2 = tensors["model.mm_projector.2.weight"], tensors["model.mm_projector.2.bias"]
        features = F.linear(F.gelu(F.linear(features, w0, b0)), w2, b2)[0]
    fields = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers")
    fields += ("num_attention_heads", "num_key_value_heads", "max_position_embeddings")
    fields += ("rms_norm_eps", "rope_theta", "hidden_act")
    lm = LlamaForCausalLM(LlamaConfig(**{k: config[k] for k in fields}))
    lm_state = {
        k: t for k, t in tensors.items() if k.startswith(("model.", "lm_head.")) and
        not k.startswith(("model.mm_projector.", "model.vision_tower.")) and
        not k.endswith(".inv_freq")
    }  # fmt: skip
    lm.load_state_dict(lm_state, strict=True)
    lm.eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    before, after = vicuna_v1_prompt(question).split("<image>")
    first = tokenizer(before).input_ids
    rest = tokenizer(after).input_ids[1:]  # tokenizer_image_token's offset: BOS once
    embed = lm.get_input_embeddings()
    with torch.no_grad():
        embeds = torch.cat(
            [embed(torch.tensor(first)), features, embed(torch.tensor(rest))]
        ).unsqueeze(0)
        logits = lm(inputs_embeds=embeds).logits[0]
    return logits, [*first, -200, *rest]


def converted_logits(converted: Path, image: Any, question: str) -> tuple[Any, list[int], str]:
    """Logits of the converted checkpoint through transformers' Llava classes, its own
    processor and its chat template; its input ids and rendered prompt."""
    import torch
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    processor = AutoProcessor.from_pretrained(converted)
    model = LlavaForConditionalGeneration.from_pretrained(converted, dtype=torch.float32).eval()
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}
    ]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    inputs = processor(text=[text], images=[image], return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        logits = model(**inputs).logits[0]
    return logits, inputs["input_ids"][0].tolist(), text


def test_converted_logits_equal_the_original_forward(original: Path, image: Any) -> None:
    import torch

    converted = llava_convert.converted_folder(original, str(original))
    want, want_ids = reference_logits(original, image, QUESTION)
    got, ids, text = converted_logits(converted, image, QUESTION)
    # The chat template renders vicuna_v1 after the BOS the original tokenizer adds.
    assert text == "<s>" + vicuna_v1_prompt(QUESTION)
    record = json.loads((converted / RECORD).read_text())
    image_id = record["image_token_id"]
    tower = json.loads((original.parent / "clip-tower" / "config.json").read_text())
    patches = (tower["image_size"] // tower["patch_size"]) ** 2  # CLS dropped ('patch')
    assert want.shape[0] == len(want_ids) - 1 + patches
    at = want_ids.index(-200)
    assert ids == want_ids[:at] + [image_id] * patches + want_ids[at + 1 :]
    vocab = want.shape[1]
    assert got.shape == (want.shape[0], vocab + 1)  # `<image>` appended as one real row
    assert torch.allclose(got[:, :vocab], want, atol=1e-4, rtol=1e-4), (
        (got[:, :vocab] - want).abs().max()
    )


def _break(converted: Path, how: str, out: Path) -> Path:
    """A copy of a converted folder with one conversion fact got wrong."""
    from safetensors.torch import load_file, save_file

    broken = shutil.copytree(converted, out / how)
    if how == "projector dropped":
        for shard in broken.glob("*.safetensors"):
            tensors = load_file(shard)
            kept = {k: t for k, t in tensors.items() if "multi_modal_projector" not in k}
            save_file(kept, shard, metadata={"format": "pt"})
    elif how == "last layer selected":
        config = json.loads((broken / "config.json").read_text())
        config["vision_feature_layer"] = -1
        (broken / "config.json").write_text(json.dumps(config))
    elif how == "not padded":
        for name in ("processor_config.json", "preprocessor_config.json"):
            saved = json.loads((broken / name).read_text())
            (saved.get("image_processor") or saved)["do_pad"] = False
            (broken / name).write_text(json.dumps(saved))
    return broken


@pytest.mark.parametrize("how", ["projector dropped", "last layer selected", "not padded"])
def test_a_broken_conversion_does_not_match(
    original: Path, image: Any, how: str, tmp_path: Path
) -> None:
    """The comparison above can fail: each fact the conversion carries changes the logits."""
    converted = llava_convert.converted_folder(original, str(original))
    want, _ = reference_logits(original, image, QUESTION)
    got, _, _ = converted_logits(_break(converted, how, tmp_path), image, QUESTION)
    assert (got[:, : want.shape[1]] - want).abs().max() > 1e-2
