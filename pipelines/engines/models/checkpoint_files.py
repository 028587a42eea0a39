"""What a checkpoint's own `config.json` says of it: modality, context, remote code.

One reading for a checkpoint folder (`--model PATH`), a hub id's snapshot (`--model
ORG/NAME`) and the pre-flight remote-code check, so the three never disagree.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path
from typing import Any, Literal

# Below this a context cannot hold one NoReGeo prompt; such a value is not trusted and the
# model config's default context applies (ModelConfig.max_model_len's lower bound).
MIN_CONTEXT = 256

# Files a tokenizer is loaded from (and a processor, chat template, remote code).
TOKENIZER_FILES = ("*.json", "*.jinja", "*.model", "*.txt", "*.tiktoken", "*.py")


def is_image_text(config: dict[str, Any]) -> bool:
    """A vision-language model: a `vision_config`, or a model type or architecture that
    transformers' image-text-to-text table lists (its own list of VLMs)."""
    if "vision_config" in config:
        return True
    image_text = image_text_table()
    architectures = config.get("architectures") or []
    return config.get("model_type") in image_text or any(
        a in image_text.values() for a in architectures if isinstance(a, str)
    )


# transformers' table of vision-language models, by model type.
IMAGE_TEXT_TABLE = "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES"


@cache
def image_text_table() -> dict[str, str]:
    """transformers' `MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES`, read from its source file
    (a literal): importing its module pulls in transformers' model and generation code,
    2-3 s of every `evaluate` on 2 cores before any row moves. Imported only if the
    literal is not where it was."""
    spec = importlib.util.find_spec("transformers")
    if spec is not None and spec.submodule_search_locations:
        source = Path(spec.submodule_search_locations[0], "models", "auto", "modeling_auto.py")
        if source.is_file():
            for node in ast.parse(source.read_text(encoding="utf-8")).body:
                if (
                    isinstance(node, ast.Assign)
                    and [getattr(t, "id", None) for t in node.targets] == [IMAGE_TEXT_TABLE]
                    and isinstance(node.value, ast.Call)
                    and len(node.value.args) == 1
                ):
                    try:
                        return dict(ast.literal_eval(node.value.args[0]))
                    except (ValueError, TypeError):
                        break
    from transformers.models.auto import modeling_auto

    return dict(getattr(modeling_auto, IMAGE_TEXT_TABLE))


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
