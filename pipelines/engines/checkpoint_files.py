"""What a checkpoint's own `config.json` says of it: modality, context, remote code.

One reading for a checkpoint folder (`--model PATH`), a hub id's snapshot (`--model
ORG/NAME`) and the pre-flight remote-code check, so the three never disagree.
"""

from __future__ import annotations

from typing import Any, Literal

# Below this a context cannot hold one NoReGeo prompt; such a value is not trusted and the
# model config's default context applies (ModelConfig.max_model_len's lower bound).
MIN_CONTEXT = 256


def is_image_text(config: dict[str, Any]) -> bool:
    """A vision-language model: a `vision_config`, or a model type or architecture that
    transformers' image-text-to-text table lists (its own list of VLMs)."""
    if "vision_config" in config:
        return True
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES as IMAGE_TEXT,
    )

    architectures = config.get("architectures") or []
    return config.get("model_type") in IMAGE_TEXT or any(
        a in IMAGE_TEXT.values() for a in architectures if isinstance(a, str)
    )


def modality(config: dict[str, Any]) -> Literal["text", "image-text"]:
    """`image-text` for a vision-language model, else `text`."""
    return "image-text" if is_image_text(config) else "text"


def context_length(config: dict[str, Any]) -> int | None:
    """`max_position_embeddings`: the language model's (`text_config`) for a VLM, else the
    top level's, each falling back to the other; None when absent or below MIN_CONTEXT."""
    text = config.get("text_config")
    text = text if isinstance(text, dict) else {}
    places = (text, config) if is_image_text(config) else (config, text)
    for place in places:
        value = place.get("max_position_embeddings")
        if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_CONTEXT:
            return value
    return None


def needs_remote_code(config: dict[str, Any]) -> bool:
    """The checkpoint maps its model type to its own code (`auto_map`) and transformers has
    no class of that type. `auto_map` alone is not enough: many checkpoints keep it for
    model types transformers now has natively, and those load without remote code."""
    if "auto_map" not in config:
        return False
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return config.get("model_type") not in CONFIG_MAPPING_NAMES
