"""Tiny random vision-language checkpoints for `hf:` tower tests and bench/probe.py, built
offline in seconds.

Each is saved with its image processor, as a hub repo would be, so `load_tower` reads the
same files it reads for a real model. CLIP comes from pipelines/engines/models/tiny_model.py's
Llava (the `tiny_vlm_dir` fixture); SigLIP and Qwen2-VL are built here.
"""

from __future__ import annotations

from pathlib import Path

import torch

WIDTH = 32  # every tiny tower's token width


def build_siglip(out: Path, seed: int = 0) -> Path:
    """A SigLIP vision model (as in Idefics3/SmolVLM/PaliGemma): 32 px, 8 px patches."""
    from transformers import SiglipImageProcessor, SiglipVisionConfig, SiglipVisionModel

    torch.manual_seed(seed)
    config = SiglipVisionConfig(
        hidden_size=WIDTH,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
    )
    SiglipVisionModel(config).save_pretrained(out)
    SiglipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(out)
    return out


def build_qwen2_vl(out: Path, seed: int = 0) -> Path:
    """A Qwen2-VL model: 4 px patches merged 2x2 by its patch merger, dynamic resolution."""
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
    )

    torch.manual_seed(seed)
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": 128,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "rope_parameters": {"rope_type": "default", "mrope_section": [2, 2, 4]},
        },
        vision_config={
            "depth": 2,
            "embed_dim": WIDTH,
            "hidden_size": 32,
            "num_heads": 2,
            "patch_size": 4,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
    )
    Qwen2VLForConditionalGeneration(config).save_pretrained(out)
    Qwen2VLImageProcessor(patch_size=4, merge_size=2).save_pretrained(out)
    return out
