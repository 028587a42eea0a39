"""A tiny random LLaVA-1.5 checkpoint in the ORIGINAL layout (haotian-liu/LLaVA's
`LlavaLlamaForCausalLM`, as G-LLaVA publishes it), built offline, and its CLIP tower saved
apart, as the hub's `openai/clip-vit-large-patch14-336` holds it.

Names and config keys are the published ones (docs/engines.md, "Original-layout LLaVA
models"): `model.embed_tokens`, `model.layers.*`, `model.norm`, `lm_head`,
`model.mm_projector.{0,2}.*`, a stray `rotary_emb.inv_freq` buffer and an embedded tower copy
`model.vision_tower.vision_tower.vision_model.*` (G-LLaVA's shards carry one), in two pickled
.bin shards with their index; `mm_*` keys in a flat Llama config.json whose model_type is
G-LLaVA's `llava`. The tokenizer has no `<image>` token (the original splices at id -200)
and adds BOS itself, as Llama's does. Only the sizes are tiny (LM head_dim 64 for vLLM's CPU
attention; 3 tower layers, so that the selected layer -2 is neither the first nor the last).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.tiny_vlms import LLAVA_IMAGE, LLAVA_PATCH, _seeded

SPECIAL = ["<unk>", "<s>", "</s>"]
HIDDEN, TOWER_WIDTH, TOWER_LAYERS = 128, 64, 3
CONTEXT = 4096


def build_tower(out: Path) -> Path:
    """A tiny CLIP vision tower: config, `vision_model.*` weights and CLIP preprocessing."""
    from safetensors.torch import save_file
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

    config = CLIPVisionConfig(
        hidden_size=TOWER_WIDTH,
        intermediate_size=128,
        num_hidden_layers=TOWER_LAYERS,
        num_attention_heads=1,
        image_size=LLAVA_IMAGE,
        patch_size=LLAVA_PATCH,
        projection_dim=64,
    )
    model = _seeded(CLIPVisionModel, config)
    model.save_pretrained(out)
    # transformers 5 saves a from-scratch tower one level up; the hub's files say vision_model.
    state = {f"vision_model.{k}": t.contiguous() for k, t in model.state_dict().items()}
    save_file(state, out / "model.safetensors", metadata={"format": "pt"})
    size = {"shortest_edge": LLAVA_IMAGE}
    crop = {"height": LLAVA_IMAGE, "width": LLAVA_IMAGE}
    CLIPImageProcessor(size=size, crop_size=crop).save_pretrained(out)
    return out


def _tokenizer() -> Any:
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    from pipelines.engines.models.tiny_model import byte_bpe

    bpe = byte_bpe(SPECIAL)
    bpe.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bpe.token_to_id("<s>"))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=2048,
    )


def build_llava_original(
    out: Path,
    projector_in: int = TOWER_WIDTH,
    projector_out: int = HIDDEN,
    **config_changes: Any,
) -> Path:
    """The original-layout checkpoint in `out`/checkpoint, its tower in `out`/clip-tower (named
    by absolute path in `mm_vision_tower`); `projector_*` and `config_changes` make bad ones.
    Returns the checkpoint folder."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tower = build_tower(out / "clip-tower")
    folder = out / "checkpoint"
    folder.mkdir(parents=True)
    tokenizer = _tokenizer()
    tokenizer.save_pretrained(folder)
    llama = {
        "vocab_size": len(tokenizer),
        "hidden_size": HIDDEN,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": CONTEXT,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.unk_token_id,
        "tie_word_embeddings": False,
    }
    lm = _seeded(LlamaForCausalLM, LlamaConfig(**llama))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        # A wide projector, so the image changes the logits well above float noise.
        projector = {
            "model.mm_projector.0.weight": torch.randn(projector_out, projector_in) * 0.2,
            "model.mm_projector.0.bias": torch.randn(projector_out) * 0.1,
            "model.mm_projector.2.weight": torch.randn(projector_out, projector_out) * 0.1,
            "model.mm_projector.2.bias": torch.randn(projector_out) * 0.1,
        }
    state = {k: t.to(torch.bfloat16) for k, t in lm.state_dict().items()}
    state.update({k: t.to(torch.bfloat16) for k, t in projector.items()})
    state["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(32)
    from safetensors.torch import load_file

    for key, t in load_file(tower / "model.safetensors").items():
        state[f"model.vision_tower.vision_tower.{key}"] = t.to(torch.bfloat16)
    first = {k: t for k, t in state.items() if k.startswith(("model.embed", "model.layers."))}
    shards = [first, {k: t for k, t in state.items() if k not in first}]
    weight_map = {}
    for number, shard in enumerate(shards, start=1):
        name = f"pytorch_model-{number:05d}-of-{len(shards):05d}.bin"
        torch.save(shard, folder / name)
        weight_map.update(dict.fromkeys(shard, name))
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    config = {
        "_name_or_path": "tiny/llava-v1.5-original",
        "architectures": ["LlavaLlamaForCausalLM"],
        "model_type": "llava",
        **llama,
        "torch_dtype": "bfloat16",
        "mm_vision_tower": str(tower.resolve()),
        "mm_hidden_size": TOWER_WIDTH,
        "mm_projector_type": "mlp2x_gelu",
        "mm_vision_select_layer": -2,
        "mm_vision_select_feature": "patch",
        "mm_patch_merge_type": "flat",
        "image_aspect_ratio": "pad",
        "mm_use_im_start_end": False,
        "mm_use_im_patch_token": False,
        "tune_mm_mlp_adapter": False,
        "freeze_mm_mlp_adapter": False,
        "use_mm_proj": True,
        "tokenizer_model_max_length": 2048,
        "tokenizer_padding_side": "right",
        **config_changes,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    (folder / "provenance.json").write_text(json.dumps({"weights": "random"}))
    return folder
