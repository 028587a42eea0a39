"""Tiny random image-text models of three vLLM families, built offline: the one place the
tests build a VLM of a real family (tests/vllm; the main suite's may use them too).

Each keeps its family's real contract: the real chat template (tests/fixtures/chat_templates/,
sources in its README), the real processor classes and their placeholder tokens, and a
vision tower vLLM's module for that family loads. Only the sizes are tiny (LM head_dim 64:
vLLM's CPU attention refuses smaller heads) and the weights random (seed 0).

- Qwen2-VL: patch 14, 2 x 2 merge; the processor resizes each side to a multiple of 28.
- Idefics3 (SmolVLM's architecture: SigLIP-style tower, pixel-shuffle connector, Llama LM):
  32 px tiles of 8 px patches, pixel shuffle 2, images split into tiles after scaling their
  longest edge to 64 px, plus one global tile.
- Llava-1.5 (CLIP tower, MLP projector, Llama LM): the CLIP processor resizes the shortest
  side to 56 px and centre-crops 56 x 56; patch 14; the "default" feature strategy drops the
  CLS position, so every image is (56 / 14)^2 = 16 placeholders whatever its size.

`expected_image_tokens` recomputes each family's placeholder count from these numbers and
the processors' published resize rules, apart from vLLM and transformers.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pipelines.engines.models.tiny_model import byte_bpe

TEMPLATES = Path(__file__).resolve().parent / "fixtures" / "chat_templates"
CONTEXT = 4096

QWEN_PATCH, QWEN_MERGE = 14, 2
QWEN_MIN_PIXELS, QWEN_MAX_PIXELS = 56 * 56, 28 * 28 * 64
QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

IDEFICS_TILE, IDEFICS_PATCH, IDEFICS_SHUFFLE, IDEFICS_LONGEST = 32, 8, 2, 64
IDEFICS_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<end_of_utterance>",
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    # Idefics3Processor looks up one id per tile position of a grid up to 6 x 6.
    *[f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)],
]

LLAVA_IMAGE, LLAVA_PATCH = 56, 14
LLAVA_SPECIAL = ["<s>", "</s>", "<image>", "<pad>"]

IMAGE_TOKEN = {
    "qwen2-vl": "<|image_pad|>",
    "idefics3": "<image>",
    "llava-1.5": "<image>",
    # tests/tiny_llava_original.py, converted: the conversion adds `<image>` to its tokenizer.
    "llava-original": "<image>",
}


def _token_ids(tokenizer: Any, tokens: list[str]) -> dict[str, int]:
    """Each token's id in `tokenizer` (every one must be a single known token)."""
    ids = {}
    for token in tokens:
        found = tokenizer.convert_tokens_to_ids(token)
        assert isinstance(found, int) and found != tokenizer.unk_token_id, token
        ids[token] = found
    return ids


def _text_config(vocab: int, eos: int, pad: int, **extra: object) -> dict[str, object]:
    return {
        "vocab_size": vocab,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": CONTEXT,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "bos_token_id": pad,
        **extra,
    }


def _seeded(model_class: Any, config: Any) -> Any:
    """`model_class(config)` with weights from seed 0; the global RNG is left as it was."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return model_class(config)


def _tokenizer(special: list[str], template: str, **tokens: Any) -> Any:
    """A byte-level BPE tokenizer holding `special` as single tokens, with the family's real
    chat template (a file of tests/fixtures/chat_templates/) and its named tokens."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=byte_bpe(special), model_max_length=CONTEXT, **tokens
    )
    tokenizer.chat_template = (TEMPLATES / template).read_text(encoding="utf-8")
    return tokenizer


def _saved(out: Path, model: Any, processor: Any) -> Path:
    """The model and its processor saved in `out`, as a hub repo holds them."""
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def build_qwen2_vl(out: Path) -> Path:
    """A tiny random Qwen2-VL with the real Qwen2-VL chat template."""
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
    )
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    tokenizer = _tokenizer(
        QWEN_SPECIAL,
        "qwen2-vl.jinja",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"},
    )
    ids = _token_ids(tokenizer, QWEN_SPECIAL)
    # M-RoPE sections sum to head_dim / 2 = 32.
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [8, 12, 12]}
    config = Qwen2VLConfig(
        text_config=_text_config(
            len(tokenizer), ids["<|im_end|>"], ids["<|endoftext|>"], rope_parameters=rope
        ),
        vision_config={
            "depth": 1,
            "embed_dim": 64,
            "hidden_size": 128,
            "num_heads": 1,
            "mlp_ratio": 2,
            "patch_size": QWEN_PATCH,
            "spatial_merge_size": QWEN_MERGE,
            "temporal_patch_size": 2,
            "in_chans": 3,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    model = _seeded(Qwen2VLForConditionalGeneration, config)
    images = Qwen2VLImageProcessor(
        patch_size=QWEN_PATCH,
        merge_size=QWEN_MERGE,
        temporal_patch_size=2,
        min_pixels=QWEN_MIN_PIXELS,
        max_pixels=QWEN_MAX_PIXELS,
    )
    processor = Qwen2VLProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=tokenizer.chat_template,
    )
    return _saved(out, model, processor)


def build_idefics3(out: Path) -> Path:
    """A tiny random Idefics3 with the real SmolVLM chat template."""
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
    )

    tokenizer = _tokenizer(
        IDEFICS_SPECIAL,
        "smolvlm.jinja",
        bos_token="<|im_start|>",
        eos_token="<end_of_utterance>",
        pad_token="<|endoftext|>",
    )
    ids = _token_ids(tokenizer, IDEFICS_SPECIAL)
    config = Idefics3Config(
        text_config=_text_config(len(tokenizer), ids["<end_of_utterance>"], ids["<|endoftext|>"]),
        vision_config={
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 1,
            "image_size": IDEFICS_TILE,
            "patch_size": IDEFICS_PATCH,
        },
        scale_factor=IDEFICS_SHUFFLE,
        image_token_id=ids["<image>"],
        tie_word_embeddings=True,
    )
    model = _seeded(Idefics3ForConditionalGeneration, config)
    images = Idefics3ImageProcessor(
        do_image_splitting=True,
        size={"longest_edge": IDEFICS_LONGEST},
        max_image_size={"longest_edge": IDEFICS_TILE},
    )
    per_tile = (IDEFICS_TILE // IDEFICS_PATCH) ** 2 // IDEFICS_SHUFFLE**2
    processor = Idefics3Processor(
        image_processor=images,
        tokenizer=tokenizer,
        image_seq_len=per_tile,
        chat_template=tokenizer.chat_template,
    )
    return _saved(out, model, processor)


def build_llava(out: Path) -> Path:
    """A tiny random Llava-1.5 with the real llava-1.5 chat template."""
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = _tokenizer(
        LLAVA_SPECIAL,
        "llava-1.5.jinja",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
    )
    ids = _token_ids(tokenizer, LLAVA_SPECIAL)
    config = LlavaConfig(
        text_config={
            "model_type": "llama",
            **_text_config(len(tokenizer), ids["</s>"], ids["<pad>"]),
        },
        vision_config={
            "model_type": "clip_vision_model",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 1,
            "image_size": LLAVA_IMAGE,
            "patch_size": LLAVA_PATCH,
            "projection_dim": 64,
        },
        image_token_index=ids["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_seq_length=(LLAVA_IMAGE // LLAVA_PATCH) ** 2,
        tie_word_embeddings=True,
    )
    model = _seeded(LlavaForConditionalGeneration, config)
    images = CLIPImageProcessor(
        size={"shortest_edge": LLAVA_IMAGE}, crop_size={"height": LLAVA_IMAGE, "width": LLAVA_IMAGE}
    )
    processor = LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=LLAVA_PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=tokenizer.chat_template,
    )
    _saved(out, model, processor)
    _as_the_hub_stores_clip(out / "model.safetensors")
    return out


def _as_the_hub_stores_clip(weights: Path) -> None:
    """Rename the CLIP tower's weights as llava-hf's checkpoints (saved by transformers 4.x)
    store them, `vision_tower.vision_model.*`, which is what vLLM 0.29's Llava loads;
    transformers 5.16 saves them one level up (`vision_tower.embeddings...`), a name vLLM
    refuses ("no module or parameter named 'vision_tower.embeddings'", seen here)."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(weights)
    tower, hub = "vision_tower.", "vision_tower.vision_model."
    renamed = {
        (hub + key[len(tower) :] if key.startswith(tower) and not key.startswith(hub) else key): t
        for key, t in tensors.items()
    }
    save_file(renamed, weights, metadata={"format": "pt"})


BUILDERS = {"qwen2-vl": build_qwen2_vl, "idefics3": build_idefics3, "llava-1.5": build_llava}


def expected_image_tokens(family: str, width: int, height: int) -> int:
    """Image placeholder tokens one image of `width` x `height` becomes, by the family's
    published rule (Qwen2-VL's `smart_resize`; Idefics3's resize-then-split), not by asking
    the processor."""
    if family == "qwen2-vl":
        unit = QWEN_PATCH * QWEN_MERGE
        # smart_resize: each side rounded to a multiple of 28, then the area scaled into
        # [QWEN_MIN_PIXELS, QWEN_MAX_PIXELS] keeping the aspect ratio.
        h, w = (round(side / unit) * unit for side in (height, width))
        if h * w > QWEN_MAX_PIXELS:
            beta = math.sqrt(height * width / QWEN_MAX_PIXELS)
            h, w = (math.floor(side / beta / unit) * unit for side in (height, width))
        elif h * w < QWEN_MIN_PIXELS:
            beta = math.sqrt(QWEN_MIN_PIXELS / (height * width))
            h, w = (math.ceil(side * beta / unit) * unit for side in (height, width))
        return (h // QWEN_PATCH) * (w // QWEN_PATCH) // QWEN_MERGE**2
    if family == "idefics3":
        scale = IDEFICS_LONGEST / max(width, height)
        h, w = (int(round(side * scale)) for side in (height, width))
        tiles = math.ceil(h / IDEFICS_TILE) * math.ceil(w / IDEFICS_TILE)
        per_tile = (IDEFICS_TILE // IDEFICS_PATCH) ** 2 // IDEFICS_SHUFFLE**2
        # The split tiles, then one global tile (no split when the image fits one tile).
        return (tiles + 1 if tiles > 1 else 1) * per_tile
    if family in ("llava-1.5", "llava-original"):
        # Resize and centre-crop to one square (the original layout pads to a square first):
        # the count does not depend on the image.
        return (LLAVA_IMAGE // LLAVA_PATCH) ** 2
    raise ValueError(f"unknown family {family!r}")
