"""The vision tower of a vision-language model, loaded through transformers (`hf:<repo|path>`).

A vision model saved on its own (SiglipVisionModel, CLIPVisionModel) is its own tower.

The tower is found on the loaded model as `vision_tower`, `visual`, `vision_model` (or
`vpm`, `vision_embed_tokens.img_processor`, also one level down under `model.`); the rest
of the model is dropped. It is cut before the projector, and before the tower's own final
norm unless `token_norm` is ln_post:

- ViT-style towers (CLIP in LLaVA, SigLIP in Idefics3/SmolVLM/LLaVA-OneVision, InternViT):
  the output of their transformer `encoder`, i.e. the last block's tokens. CLIP's HF
  `last_hidden_state` is exactly this; SigLIP/Idefics3 apply `post_layernorm` to their
  `last_hidden_state`, so "none" reads before it and "ln_post" applies it.
- Qwen2-VL / Qwen2.5-VL: the `visual` module ends in a patch merger (norm `ln_q`, then an
  MLP that merges 2x2 patches into one LLM token): that merger is the projector. Tokens are
  read at the merger's input, one per 14-px patch (4x the tokens the LLM sees); ln_post
  applies `merger.ln_q`. Qwen2.5-VL's tokens there are in its window-attention order: a
  fixed permutation per image size, which a flattening linear head does not care about.

Images reach the tower normalised with the model's own image processor's mean/std. Towers
with fixed position embeddings get the image resized to their configured `image_size`;
Qwen towers to the nearest multiple of patch x merge size (their dynamic resolution).
`trust_remote_code`, revision and dtype come from the model's config in configs/models
when `hf:` names its repo (or its config name); a local path gets trust_remote_code false.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import yaml
from torch import nn

from probes.towers.base import EncoderError, TokenNorm, Tower

MODEL_CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "models"
TOWER_PATHS = (
    "vision_tower",
    "visual",
    "vision_model",
    "vpm",
    "vision_embed_tokens.img_processor",
)
# Where a ViT-style tower's transformer stack is: its output is the pre-norm token sequence.
ENCODER_PATHS = ("encoder", "vision_model.encoder")
# A tower's own final norm over the tokens (ln_post).
NORM_PATHS = ("post_layernorm", "vision_model.post_layernorm", "merger.ln_q", "ln_post")


@dataclass(frozen=True)
class HFSource:
    """Where an `hf:` tower comes from and how to load it."""

    name: str  # what followed `hf:`
    path: str  # repo ID or local directory
    revision: str | None
    trust_remote_code: bool
    dtype: str


def _model_configs() -> list[dict[str, Any]]:
    """configs/models/*.yaml as plain mappings (read here, not through pipelines/, which
    probes/ may not import; pipelines/engines/models/config_yaml.py validates the same files)."""
    configs = []
    for path in sorted(MODEL_CONFIG_DIR.glob("*.yaml")):
        with contextlib.suppress(OSError, UnicodeDecodeError, yaml.YAMLError):
            data = yaml.safe_load(path.read_text())
            if isinstance(data, dict):
                configs.append(data)
    return configs


def resolve_source(name: str, revision: str | None) -> HFSource:
    """`name` as a configs/models entry (by repo or config name) or a bare repo/path."""
    config = next((c for c in _model_configs() if name in (c.get("repo"), c.get("name"))), None)
    if config is None:
        return HFSource(name, name, revision, False, "auto")
    pinned = str(config.get("revision") or "main")
    return HFSource(
        name,
        str(config["repo"]),
        revision or (None if pinned in ("main", "none", "local") else pinned),
        bool(config.get("trust_remote_code", False)),
        str(config.get("dtype") or "auto"),
    )


def _submodule(module: nn.Module, paths: tuple[str, ...]) -> tuple[str, nn.Module] | None:
    for path in paths:
        try:
            return path, module.get_submodule(path)
        except AttributeError:
            continue
    return None


def find_tower(model: nn.Module) -> nn.Module:
    """The vision tower of a loaded vision-language model (or the model, if it is one)."""
    prefixes = ("", "model.")
    found = _submodule(model, tuple(p + t for p in prefixes for t in TOWER_PATHS))
    if found is None and "Vision" in type(model).__name__ and _submodule(model, ENCODER_PATHS):
        return model  # a vision model saved on its own (SiglipVisionModel, CLIPVisionModel)
    if found is None:
        raise EncoderError(
            f"{type(model).__name__} has no vision tower (looked for "
            f"{', '.join(TOWER_PATHS)}, also under model.)"
        )
    tower = found[1]
    if isinstance(tower, nn.ModuleList | nn.ModuleDict):
        raise EncoderError(f"{type(model).__name__}.{found[0]} is a list of towers")
    return tower


def _auto_classes() -> list[Any]:
    import transformers

    return [transformers.AutoModel, transformers.AutoModelForImageTextToText]


def _config(source: HFSource) -> Any:
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(
            source.path, revision=source.revision, trust_remote_code=source.trust_remote_code
        )
    except (OSError, ValueError, KeyError, ImportError) as err:
        raise EncoderError(f"hf:{source.name}: {_first_line(err)}") from err


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _reachable(source: HFSource) -> None:
    """A repo whose config is not cached needs the hub: find out in seconds, not in a
    download's retries, as open_clip tags do (probes/encoder.py)."""
    from huggingface_hub import try_to_load_from_cache

    from probes.encoder import hub_unreachable

    if Path(source.path).is_dir():
        return
    try:
        cached = try_to_load_from_cache(source.path, "config.json", revision=source.revision)
    except ValueError:  # not a repo ID: AutoConfig says why
        return
    reason = None if isinstance(cached, str) else hub_unreachable()
    if reason:
        raise EncoderError(
            f"hf:{source.name}: not cached and the model hub cannot be reached ({reason}); "
            f"fill the Hugging Face cache where there is network access (`hf download "
            f"{source.path}`) and copy it here"
        )


def check_source(source: HFSource) -> None:
    """Fail fast, without loading weights: the config loads and its model has a tower.

    The model is built on the meta device (no memory, no weights), so a text-only model or
    an unsupported architecture is refused before any trial starts.
    """
    _reachable(source)
    config = _config(source)
    errors = []
    for auto in _auto_classes():
        try:
            with torch.device("meta"):
                model = auto.from_config(config, trust_remote_code=source.trust_remote_code)
        except (ValueError, KeyError, ImportError, TypeError, AttributeError) as err:
            errors.append(_first_line(err))
            continue
        try:
            find_tower(model)
        except EncoderError as err:
            errors.append(str(err))
            continue
        return
    raise EncoderError(f"hf:{source.name}: no vision tower loads ({'; '.join(errors)})")


def _image_stats(source: HFSource) -> tuple[tuple[float, ...], tuple[float, ...]]:
    from transformers import AutoImageProcessor

    try:
        processor = AutoImageProcessor.from_pretrained(
            source.path, revision=source.revision, trust_remote_code=source.trust_remote_code
        )
    except (OSError, ValueError, KeyError, ImportError) as err:
        raise EncoderError(f"hf:{source.name}: no image processor ({_first_line(err)})") from err
    mean, std = getattr(processor, "image_mean", None), getattr(processor, "image_std", None)
    if mean is None or std is None:
        raise EncoderError(f"hf:{source.name}: its image processor names no image_mean/std")
    return _per_channel(mean), _per_channel(std)


def _per_channel(value: Any) -> tuple[float, ...]:
    """An image processor's mean or std as one float per RGB channel."""
    return (float(value),) * 3 if isinstance(value, int | float) else tuple(map(float, value))


def load_model(source: HFSource) -> nn.Module:
    """The whole model with its weights (on CPU), through the first auto class that takes it."""
    errors = []
    for auto in _auto_classes():
        try:
            return auto.from_pretrained(
                source.path,
                revision=source.revision,
                trust_remote_code=source.trust_remote_code,
                dtype=source.dtype,
            )
        except (ValueError, KeyError, TypeError) as err:
            errors.append(_first_line(err))
        except OSError as err:  # missing files: every auto class would say the same
            raise EncoderError(f"hf:{source.name}: {_first_line(err)}") from err
    raise EncoderError(f"hf:{source.name}: the model does not load ({'; '.join(errors)})")


def load_hf_tower(name: str, revision: str | None, token_norm: TokenNorm) -> Tower:
    """The vision tower of `name` (repo, config name or local path), in float32, cut before
    the projector; see the module docstring for where."""
    source = resolve_source(name, revision)
    mean, std = _image_stats(source)
    model = load_model(source)
    tower = find_tower(model)
    # float32: an unfrozen tower is trained with AdamW at lr 2e-6, whose steps vanish in
    # bf16 weights; AMP autocasts the forward on GPUs anyway.
    tower = tower.float()
    del model
    if _submodule(tower, ("merger",)) is not None and hasattr(tower, "patch_embed"):
        return QwenVisionTower(tower, mean, std, token_norm, name)
    return ViTTower(tower, mean, std, token_norm, name)


def _norm(tower: nn.Module, token_norm: TokenNorm, name: str) -> nn.Module:
    if token_norm == "none":
        return nn.Identity()
    found = _submodule(tower, NORM_PATHS)
    if found is None:
        raise EncoderError(
            f"hf:{name}: --token-norm ln_post, but the tower has no final norm "
            f"({', '.join(NORM_PATHS)}); use --token-norm none"
        )
    return found[1]


def _tensor(output: Any) -> torch.Tensor:
    """The token tensor of a module's output (a tensor, a tuple or a ModelOutput)."""
    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "last_hidden_state"):
        return output.last_hidden_state
    return output[0]


class ViTTower(Tower):
    """A ViT-style tower: the tokens its transformer encoder outputs (before any final norm)."""

    def __init__(
        self,
        tower: nn.Module,
        mean: tuple[float, ...],
        std: tuple[float, ...],
        token_norm: TokenNorm,
        name: str,
    ):
        super().__init__(mean, std, token_norm)
        self.tower = tower
        found = _submodule(tower, ENCODER_PATHS)
        if found is None:
            raise EncoderError(f"hf:{name}: {type(tower).__name__} has no transformer `encoder`")
        self.encoder_path = found[0]
        self.norm = _norm(tower, token_norm, name)
        config = getattr(tower, "config", None)
        size = getattr(config, "image_size", None)
        self.image_size = int(size) if isinstance(size, int) else None

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """[B, tokens, width]: the encoder's output (class token first where there is one)."""
        if self.image_size and images.shape[-1] != self.image_size:
            images = F.interpolate(
                images, size=(self.image_size, self.image_size), mode="bicubic", antialias=True
            )
        caught: list[torch.Tensor] = []
        hook = self.tower.get_submodule(self.encoder_path).register_forward_hook(
            lambda _module, _args, output: caught.append(_tensor(output))
        )
        try:
            self.tower(pixel_values=images.to(next(self.tower.parameters()).dtype))
        finally:
            hook.remove()
        return self.norm(caught[-1])


def _patchify(images: torch.Tensor, patch: int, merge: int, temporal: int) -> torch.Tensor:
    """Qwen2-VL's image processor layout: [B*T, C*temporal*patch*patch] in merge-window order
    (one still image repeated over the temporal patch, as the processor does)."""
    b, c, h, w = images.shape
    gh, gw = h // patch, w // patch
    frames = images.unsqueeze(1).expand(b, temporal, c, h, w)
    x = frames.reshape(b, temporal, c, gh // merge, merge, patch, gw // merge, merge, patch)
    x = x.permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(b * gh * gw, c * temporal * patch * patch)


class QwenVisionTower(Tower):
    """Qwen2-VL-style `visual`: tokens at the patch merger's input, one per patch."""

    def __init__(
        self,
        tower: nn.Module,
        mean: tuple[float, ...],
        std: tuple[float, ...],
        token_norm: TokenNorm,
        name: str,
    ):
        super().__init__(mean, std, token_norm)
        self.tower = tower
        config: Any = getattr(tower, "config")  # noqa: B009  # a transformers PretrainedConfig
        self.patch = int(config.patch_size)
        self.merge = int(config.spatial_merge_size)
        self.temporal = int(getattr(config, "temporal_patch_size", 2))
        self.norm = _norm(tower, token_norm, name)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """[B, patches, width] before the merger (and before its ln_q unless ln_post)."""
        step = self.patch * self.merge
        side = max(step, round(images.shape[-1] / step) * step)
        if side != images.shape[-1] or images.shape[-2] != side:
            images = F.interpolate(images, size=(side, side), mode="bicubic", antialias=True)
        b = images.shape[0]
        grid = torch.tensor([[1, side // self.patch, side // self.patch]] * b)
        pixels = _patchify(images, self.patch, self.merge, self.temporal)
        caught: list[torch.Tensor] = []
        merger = self.tower.get_submodule("merger")
        hook = merger.register_forward_pre_hook(lambda _module, args: caught.append(args[0]))
        try:
            dtype = next(self.tower.parameters()).dtype
            self.tower(pixels.to(dtype), grid_thw=grid.to(images.device))
        finally:
            hook.remove()
        tokens = caught[-1]
        return self.norm(tokens.reshape(b, tokens.shape[0] // b, tokens.shape[-1]))


def local_or_repo(name: str) -> str:
    """A short label: a local directory's name, else the repo ID."""
    path = Path(name)
    return path.name if path.is_dir() else name
