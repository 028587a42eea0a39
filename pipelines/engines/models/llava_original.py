"""Original-layout LLaVA-1.5 checkpoints (haotian-liu/LLaVA's `LlavaLlamaForCausalLM`: G-LLaVA,
Math-LLaVA, MultiMath) read, checked and converted to the llava-hf layout vLLM and transformers
load (`LlavaForConditionalGeneration`).

The original keeps the language model and projector in one checkpoint and loads the CLIP tower
from the repo or folder its config names (`mm_vision_tower`; LLaVA `llava/model/builder.py:
155-160`). The converted folder holds all three under the legacy llava-hf tensor names (vLLM
0.29's own module names, which transformers 5 also loads), the image token as a real
vocabulary row, a processor that pads to a square as the original does, and the model's
conversation as its chat template (`llava_conversations`). Every fact used is read from the
checkpoint's config.json and asserted on, never assumed (MultiMath is DeepSeek-based, vocab
102400). Sources are in docs/engines.md, "Original-layout LLaVA models".

`plan` checks everything it can before a byte is written (bad input: LayoutError, one line);
`convert` writes into a staging folder renamed into place whole, so an interrupted conversion
leaves nothing a later run would load (it converts again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from store.errors import UsageError

LAYOUT = "llava-original"
CONVERTED_SUFFIX = "+llava-hf"  # a converted hub checkpoint's mirror: <repo>@<commit>+llava-hf
ARCHITECTURE = "LlavaLlamaForCausalLM"
# LLaVA's own config class says llava_llama; G-LLaVA and Math-LLaVA's forks say llava.
MODEL_TYPES = ("llava_llama", "llava")
RECORD = "geosee-conversion.json"  # written last into the staging folder: a whole conversion
CACHE_ENV = "GEOSEE_CONVERTED_DIR"  # where converted checkpoints go (default: the HF cache's)
CONVERTER_VERSION = 1  # part of the cache key: a changed converter converts again
MAX_SHARDS = 256
MAX_INDEX_BYTES = 64 << 20
IMAGE_TOKEN = "<image>"

# Published tensor names -> llava-hf names (first matching prefix wins); tf-convert's
# KEYS_TO_MODIFY_MAPPING, narrowed to what a LLaVA-1.5 checkpoint holds, so that anything
# else (an `image_newline`, a resampler) is refused rather than carried along unread.
RENAMES = (
    ("model.mm_projector.0.", "multi_modal_projector.linear_1."),
    ("model.mm_projector.2.", "multi_modal_projector.linear_2."),
    ("model.embed_tokens.", "language_model.model.embed_tokens."),
    ("model.layers.", "language_model.model.layers."),
    ("model.norm.", "language_model.model.norm."),
    ("lm_head.", "language_model.lm_head."),
)
# An embedded tower copy is ignored by the original, which loads `mm_vision_tower` (LLaVA
# clip_encoder.py:17-33); transformers 4.31's rotary buffers are not weights.
DROPPED_PREFIX = "model.vision_tower."
DROPPED_SUFFIX = ".inv_freq"
EMBED, HEAD = "model.embed_tokens.weight", "lm_head.weight"
PROJECTOR = ("model.mm_projector.0.weight", "model.mm_projector.2.weight")
# The Llama fields the language model's config keeps (the rest are LLaVA training keys).
TEXT_FIELDS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "hidden_act",
    "max_position_embeddings",
    "rms_norm_eps",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "attention_bias",
    "attention_dropout",
    "mlp_bias",
    "pretraining_tp",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
)
# The tower's CLIP preprocessing kept in the converted LlavaImageProcessor.
IMAGE_FIELDS = (
    "do_resize",
    "size",
    "resample",
    "do_center_crop",
    "crop_size",
    "do_rescale",
    "rescale_factor",
    "do_normalize",
    "image_mean",
    "image_std",
    "do_convert_rgb",
)
# What llava-hf calls mm_vision_select_feature 'patch' (CLS dropped) and 'cls_patch'.
Strategy = Literal["default", "full"]


class LayoutError(UsageError):
    """An original-layout checkpoint that cannot be converted; the message names what."""


def is_original_llava(config: dict[str, Any]) -> bool:
    """Whether `config` (a config.json) is an original-layout LLaVA checkpoint: its
    architecture, or a LLaVA model type with the original's flat `mm_*` keys (the llava-hf
    layout nests a `text_config`)."""
    architectures = config.get("architectures") or []
    if ARCHITECTURE in architectures or config.get("model_type") == "llava_llama":
        return True
    return config.get("model_type") == "llava" and "mm_vision_tower" in config


@dataclass(frozen=True)
class Plan:
    """A checked original checkpoint: what `convert` reads and writes."""

    folder: Path
    config: dict[str, Any]
    weights: tuple[Path, ...]
    tower: Path
    tower_weights: tuple[Path, ...]
    vision_config: dict[str, Any]
    image_processor: dict[str, Any]
    select_layer: int
    strategy: Strategy  # llava-hf's vision_feature_select_strategy
    do_pad: bool
    conversation: str


def weight_files(folder: Path) -> tuple[Path, ...]:
    """The checkpoint's weight files: a sharded index's shards, or the single file."""
    for index, single in (
        ("model.safetensors.index.json", "model.safetensors"),
        ("pytorch_model.bin.index.json", "pytorch_model.bin"),
    ):
        if (folder / index).is_file():
            return _indexed(folder, folder / index)
        if (folder / single).is_file():
            return (folder / single,)
    raise LayoutError(f"{folder} holds no weights (model.safetensors or pytorch_model.bin)")


def _indexed(folder: Path, index: Path) -> tuple[Path, ...]:
    if index.stat().st_size > MAX_INDEX_BYTES:
        raise LayoutError(f"{index} is larger than {MAX_INDEX_BYTES} bytes: not a weight index")
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        names = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise LayoutError(f"{index} is no weight index ({err})") from err
    if not 0 < len(names) <= MAX_SHARDS:
        raise LayoutError(f"{index} names {len(names)} shards (1 to {MAX_SHARDS} expected)")
    for name in names:  # plain file names beside the index, never a path out of the folder
        if not isinstance(name, str) or Path(name).name != name or name.startswith("."):
            raise LayoutError(f"{index} names {str(name)[:60]!r}, not a file beside it")
        if not (folder / name).is_file():
            raise LayoutError(f"{index} names {name}, which {folder} does not hold")
    return tuple(folder / n for n in names)


def load_tensors(path: Path) -> dict[str, Any]:
    """The tensors of one weights file: safetensors, or a pickle read with
    `weights_only=True` (the published .bin shards hold only tensors; LLaVA's are BF16)."""
    import torch
    from safetensors.torch import load_file

    if path.suffix == ".safetensors":
        return load_file(path)
    try:
        tensors = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as err:  # noqa: BLE001 (any unpickling failure: one line naming the file)
        raise LayoutError(f"{path} cannot be read as weights ({type(err).__name__})") from err
    if not isinstance(tensors, dict):
        raise LayoutError(f"{path} holds no state dict")
    return tensors


def _shapes(paths: tuple[Path, ...]) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape (safetensors: from the header; .bin: memory-mapped)."""
    from safetensors import safe_open

    shapes: dict[str, tuple[int, ...]] = {}
    for path in paths:
        if path.suffix == ".safetensors":
            with safe_open(str(path), "pt") as f:
                for key in f.keys():  # noqa: SIM118 (safe_open has no __iter__)
                    shapes[key] = tuple(f.get_slice(key).get_shape())
        else:
            shapes.update({k: tuple(t.shape) for k, t in load_tensors(path).items()})
    return shapes


def renamed(key: str) -> str | None:
    """The llava-hf name of a published tensor; None for one the conversion drops;
    LayoutError for one it does not know."""
    if key.startswith(DROPPED_PREFIX) or key.endswith(DROPPED_SUFFIX):
        return None
    for old, new in RENAMES:
        if key.startswith(old):
            return new + key[len(old) :]
    raise LayoutError(
        f"tensor {key!r} is not part of a LLaVA-1.5 checkpoint (language model, mlp2x_gelu "
        "projector): not converted"
    )


def tower_name(key: str) -> str | None:
    """The llava-hf name of a CLIP tower tensor: the hub's `vision_model.*` (a CLIPModel's
    text half and projections are not the tower), or transformers 5's bare names."""
    if key.startswith("vision_model."):
        return "vision_tower." + key
    if key.startswith(("embeddings.", "pre_layrnorm.", "encoder.", "post_layernorm.")):
        return "vision_tower.vision_model." + key
    return None


def _need(config: dict[str, Any], key: str, kind: type, folder: Path) -> Any:
    value = config.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise LayoutError(f"{folder / 'config.json'}: {key} is {value!r}, not a {kind.__name__}")
    return value


def _check_flags(config: dict[str, Any], folder: Path) -> tuple[int, Strategy, bool]:
    """The multimodal keys a LLaVA-1.5 checkpoint sets, each checked against what the
    llava-hf layout can express: (select layer, feature strategy, pad)."""
    where = folder / "config.json"
    # llava/model/multimodal_projector/builder.py:39-46; llava-hf's projector is this MLP.
    if config.get("mm_projector_type") != "mlp2x_gelu":
        raise LayoutError(
            f"{where}: mm_projector_type is {config.get('mm_projector_type')!r}; only "
            "LLaVA-1.5's mlp2x_gelu has a llava-hf form"
        )
    # Each of these adds tokens or rows llava-hf does not have (LLaVA builder.py:146-153,
    # llava_arch.py:160-163); train.py's default for mm_use_im_patch_token is True.
    for key, allowed in (
        ("mm_use_im_start_end", (False, None)),
        ("mm_use_im_patch_token", (False,)),
        ("mm_patch_merge_type", ("flat", None)),
        ("image_aspect_ratio", ("pad", "square", None)),
    ):
        if config.get(key) not in allowed:
            raise LayoutError(
                f"{where}: {key} is {config.get(key)!r}; a LLaVA-1.5 conversion needs one of "
                f"{', '.join(repr(a) for a in allowed)}"
            )
    layer = _need(config, "mm_vision_select_layer", int, folder)
    feature = config.get("mm_vision_select_feature", "patch")  # train.py:56-76's default
    strategies: dict[str, Strategy] = {"patch": "default", "cls_patch": "full"}
    if feature not in strategies:
        raise LayoutError(f"{where}: mm_vision_select_feature {feature!r} is not patch/cls_patch")
    # mm_utils.process_images: expand2square only for 'pad'; else CLIP's resize and crop.
    return layer, strategies[feature], config.get("image_aspect_ratio") == "pad"


def find_tower(name: str, folder: Path, revision: str | None) -> Path:
    """The CLIP tower `mm_vision_tower` names: a folder (as the original's `from_pretrained`
    takes one, or beside the checkpoint), else a hub id fetched at `revision`."""
    from pipelines.engines.models.hub_model import HubError, download, parse_hub_id
    from pipelines.engines.models.hub_model import resolve_commit as resolve_hub_commit

    for candidate in (Path(name), folder / name):
        if candidate.is_dir():
            return candidate
    hub_id = parse_hub_id(name)
    if hub_id is None:
        raise LayoutError(
            f"{folder}: its vision tower {name!r} (mm_vision_tower) is neither a folder nor a "
            "hub id; give the CLIP tower's folder there"
        )
    if revision:
        hub_id = type(hub_id)(hub_id.repo, revision)
    try:
        return download(hub_id, resolve_hub_commit(hub_id))
    except HubError as err:
        raise LayoutError(f"{folder}: its vision tower cannot be fetched: {err}") from err


def _vision_config(tower: Path) -> dict[str, Any]:
    from transformers import CLIPVisionConfig

    try:  # a CLIPModel's config.json nests it; a CLIPVisionModel's is it
        vision = CLIPVisionConfig.from_pretrained(tower)
    except (OSError, ValueError, TypeError) as err:
        raise LayoutError(f"vision tower {tower}: no CLIP vision config ({err})") from err
    return dict(vision.to_dict())


def _image_processor(tower: Path) -> dict[str, Any]:
    path = tower / "preprocessor_config.json"
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise LayoutError(f"vision tower {tower}: {path.name} cannot be read ({err})") from err
    if not isinstance(saved, dict):
        raise LayoutError(f"vision tower {tower}: {path.name} is not a JSON object")
    return {k: saved[k] for k in IMAGE_FIELDS if k in saved}


def plan(
    folder: Path,
    conversation: str | None = None,
    tower: str | None = None,
    tower_revision: str | None = None,
) -> Plan:
    """`folder`'s original checkpoint checked for conversion; nothing is written. `tower`
    replaces the config's `mm_vision_tower`; `conversation` (llava_conversations) defaults
    by the tokenizer's EOS."""
    from pipelines.engines.models.llava_conversations import CONVERSATIONS, default_conversation

    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise LayoutError(f"{folder / 'config.json'} cannot be read ({err})") from err
    if not isinstance(config, dict) or not is_original_llava(config):
        raise LayoutError(f"{folder}: config.json is not an original-layout LLaVA checkpoint")
    if config.get("model_type") not in MODEL_TYPES:
        raise LayoutError(f"{folder}: model_type {config.get('model_type')!r} is not llava")
    layer, strategy, do_pad = _check_flags(config, folder)
    hidden = _need(config, "hidden_size", int, folder)
    vocab = _need(config, "vocab_size", int, folder)
    tower_path = find_tower(
        tower or _need(config, "mm_vision_tower", str, folder), folder, tower_revision
    )
    vision = _vision_config(tower_path)
    width, depth = int(vision["hidden_size"]), int(vision["num_hidden_layers"])
    if config.get("mm_hidden_size", width) != width:
        raise LayoutError(
            f"{folder}: mm_hidden_size {config.get('mm_hidden_size')} differs from the hidden "
            f"size {width} of its vision tower {tower_path}"
        )
    if not -(depth + 1) <= layer <= depth:  # hidden_states holds the embeddings + each layer
        raise LayoutError(
            f"{folder}: mm_vision_select_layer {layer} is outside the {depth} layers of "
            f"{tower_path}"
        )
    weights = weight_files(folder)
    shapes = _shapes(weights)
    for key in shapes:
        renamed(key)  # every tensor known before anything is written
    expected = {
        PROJECTOR[0]: (hidden, width),
        PROJECTOR[1]: (hidden, hidden),
        EMBED: (vocab, hidden),
        HEAD: (vocab, hidden),
    }
    for key, shape in expected.items():
        if key not in shapes:
            raise LayoutError(f"{folder}: the checkpoint has no tensor {key}")
        if shapes[key] != shape:
            raise LayoutError(
                f"{folder}: {key} has shape {list(shapes[key])}, expected {list(shape)} "
                f"(LM hidden size {hidden}, vision tower {tower_path} hidden size {width}, "
                f"vocab_size {vocab})"
            )
    tower_weights = weight_files(tower_path)
    if not any(tower_name(k) for k in _shapes(tower_weights)):
        raise LayoutError(f"vision tower {tower_path}: its weights hold no CLIP vision model")
    if conversation is None:
        conversation = default_conversation(_eos_token(folder))
    if conversation not in CONVERSATIONS:
        raise LayoutError(f"conversation {conversation!r}: known are {', '.join(CONVERSATIONS)}")
    return Plan(
        folder,
        config,
        weights,
        tower_path,
        tower_weights,
        vision,
        _image_processor(tower_path),
        layer,
        strategy,
        do_pad,
        conversation,
    )


def _eos_token(folder: Path) -> str | None:
    """The EOS the checkpoint's tokenizer_config.json names (a string or an AddedToken)."""
    try:
        saved = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    eos = saved.get("eos_token") if isinstance(saved, dict) else None
    return eos.get("content") if isinstance(eos, dict) else eos
