"""open_clip vision encoders for probing, and the paper's all-token head.

Weights come from a local file (loaded, never downloaded) or an open_clip tag. A tag whose
file is not already cached needs the hub: that is checked before open_clip is asked, so a
machine without network access fails at once with a message instead of hanging in a
download. `ProbeTiny-ViT-32` is a small random ViT registered from
`probes/model_configs/` so CPU tests and smoke grids can run the same code in seconds.
`OpenClipTower` is the registry's `open_clip:<arch>` tower (probes/towers/); vision towers of
vision-language models come from probes/towers/hf.py.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Any

import torch
from torch import nn

from probes.towers.base import EncoderError, TokenNorm, Tower

MODEL_CONFIG_DIR = Path(__file__).resolve().parent / "model_configs"
TINY_ARCH = "ProbeTiny-ViT-32"
# CLIP's normalisation, used when the model carries no preprocess config of its own.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HUB_HOST = ("huggingface.co", 443)
HUB_PROBE_SECONDS = 3.0
NO_WEIGHTS = ("", "none", "random")


__all__ = ["EncoderError", "OpenClipTower", "ProbeModel", "load_encoder", "resolve_weights"]


def register_probe_models() -> None:
    """Add the repository's open_clip model configs (idempotent)."""
    import open_clip

    if TINY_ARCH not in open_clip.list_models():
        open_clip.add_model_config(MODEL_CONFIG_DIR)


def _offline_env() -> str | None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{var} is set"
    return None


def hub_unreachable() -> str | None:
    """Why the hub cannot be reached (None when it can), decided within a few seconds.

    The connect runs in a daemon thread because name resolution has no timeout of its own.
    """
    reason = _offline_env()
    if reason:
        return reason
    errors: list[str] = []

    def connect() -> None:
        try:
            socket.create_connection(HUB_HOST, timeout=HUB_PROBE_SECONDS).close()
        except OSError as err:
            errors.append(f"{HUB_HOST[0]}: {err}")

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(HUB_PROBE_SECONDS + 0.5)
    if thread.is_alive():
        return f"{HUB_HOST[0]}: no answer within {HUB_PROBE_SECONDS:.0f}s"
    return errors[0] if errors else None


def _cached_weights(tag_cfg: dict[str, Any], cache_dir: str | None) -> str | None:
    """The tag's weights file if a previous download left it on disk; no network."""
    if tag_cfg.get("file"):
        return str(tag_cfg["file"])
    hub = tag_cfg.get("hf_hub", "")
    if hub:
        from huggingface_hub import try_to_load_from_cache

        repo_id, filename = os.path.split(hub)
        names = [filename] if filename else []
        names += ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        for name in names:
            found = try_to_load_from_cache(repo_id, name, cache_dir=cache_dir)
            if isinstance(found, str):
                return found
    url = tag_cfg.get("url", "")
    if url:
        local = Path(cache_dir or Path.home() / ".cache" / "clip") / os.path.basename(url)
        if local.is_file():
            return str(local)
    return None


def resolve_weights(arch: str, pretrained: str | None, cache_dir: str | None = None) -> str | None:
    """A local weights file for `pretrained` (None: random weights).

    `pretrained` is a file path, an open_clip tag for `arch`, or None/"none"/"random".
    An uncached tag is downloaded only when the hub answers; otherwise this raises at once.
    """
    import open_clip

    if pretrained is None or pretrained.strip().lower() in NO_WEIGHTS:
        return None
    if Path(pretrained).is_file():
        return pretrained
    tag_cfg = open_clip.get_pretrained_cfg(arch, pretrained)
    if not tag_cfg:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        raise EncoderError(
            f"--pretrained {pretrained!r} is neither an existing file nor an open_clip tag for "
            f"{arch} (tags: {', '.join(tags) or 'none'}); pass a weights file path"
        )
    cached = _cached_weights(tag_cfg, cache_dir)
    if cached:
        return cached
    reason = hub_unreachable()
    if reason:
        raise EncoderError(
            f"weights {arch}/{pretrained} are not cached and the model hub cannot be reached "
            f"({reason}); download them where there is network access (open_clip caches them "
            f"under ~/.cache/huggingface) and pass --pretrained /path/to/weights instead"
        )
    return str(open_clip.download_pretrained(tag_cfg, cache_dir=cache_dir))


def load_encoder(
    arch: str, pretrained: str | None, cache_dir: str | None = None
) -> tuple[nn.Module, tuple[float, ...], tuple[float, ...]]:
    """The open_clip visual tower of `arch` with `pretrained` weights, plus its mean/std."""
    import open_clip

    register_probe_models()
    if arch not in open_clip.list_models():
        raise EncoderError(f"unknown open_clip arch {arch!r}; e.g. ViT-B-32 or {TINY_ARCH}")
    weights = resolve_weights(arch, pretrained, cache_dir)
    tag_cfg = open_clip.get_pretrained_cfg(arch, pretrained) if pretrained else {}
    model = open_clip.create_model(
        arch,
        pretrained=weights,
        # OpenAI weights were trained with QuickGELU; a mismatch silently degrades features.
        force_quick_gelu=bool(tag_cfg.get("quick_gelu", False)),
        cache_dir=cache_dir,
    )
    visual = model.visual
    if not hasattr(visual, "forward_intermediates") or not hasattr(visual, "class_embedding"):
        raise EncoderError(f"{arch}: only open_clip VisionTransformer towers are supported")
    cfg = getattr(visual, "preprocess_cfg", {}) or {}
    mean = tuple(cfg.get("mean", CLIP_MEAN))
    std = tuple(cfg.get("std", CLIP_STD))
    return visual, mean, std


def all_tokens(visual: Any, images: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """Every output token of the last block: [B, 1 + patches, width].

    `normalize` applies open_clip's final norm (`ln_post`) to every token, as this function
    always did before `--token-norm`; HF's CLIP `last_hidden_state` (the paper's) has none.
    open_clip's `output_tokens=True` returns the patch tokens only; the paper's head flattens
    the class token too, so the class token is concatenated back in front.
    """
    out = visual.forward_intermediates(
        images,
        indices=1,
        normalize_intermediates=normalize,
        intermediates_only=True,
        output_fmt="NLC",
        output_extra_tokens=True,
    )
    return torch.cat([out["image_intermediates_prefix"][0], out["image_intermediates"][0]], dim=1)


def token_shape(visual: Any) -> tuple[int, int]:
    """(tokens, width) of `all_tokens` for this tower, from its config, not a forward pass."""
    grid = visual.grid_size
    return 1 + int(grid[0]) * int(grid[1]), int(visual.class_embedding.shape[-1])


class OpenClipTower(Tower):
    """An open_clip VisionTransformer: class token + patch tokens of the last block."""

    def __init__(
        self,
        visual: nn.Module,
        mean: tuple[float, ...] = CLIP_MEAN,
        std: tuple[float, ...] = CLIP_STD,
        token_norm: TokenNorm = "ln_post",
    ):
        super().__init__(mean, std, token_norm)
        self.visual = visual

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """[B, 1 + patches, width], through `ln_post` when token_norm is ln_post."""
        return all_tokens(self.visual, images, normalize=self.token_norm == "ln_post")

    def token_shape(self, image_size: int) -> tuple[int, int]:
        """From the config: open_clip towers take one input size, whatever the grid's."""
        return token_shape(self.visual)


def load_open_clip_tower(arch: str, pretrained: str | None, token_norm: TokenNorm) -> Tower:
    """`load_encoder`'s tower wrapped for the probe head, with `token_norm`."""
    visual, mean, std = load_encoder(arch, pretrained)
    return OpenClipTower(visual, mean, std, token_norm)


class ProbeModel(nn.Module):
    """Encoder + head: flatten all tokens -> Linear(T*W, W) -> Linear(W, 2) (paper App. B).

    `visual` is a `Tower`; a bare open_clip visual (as `load_encoder` returns it) is wrapped
    with its ln_post applied, as before towers existed. `image_size` sizes the head for towers
    whose token count follows the input (Qwen2-VL); open_clip towers ignore it.
    """

    def __init__(
        self, visual: nn.Module, frozen: bool, num_classes: int = 2, image_size: int = 224
    ):
        super().__init__()
        self.visual = visual if isinstance(visual, Tower) else OpenClipTower(visual)
        self.frozen = frozen
        tokens, width = self.visual.token_shape(image_size)
        self.pool = nn.Linear(tokens * width, width)
        self.classify = nn.Linear(width, num_classes)
        if frozen:
            self.visual.requires_grad_(False)

    def train(self, mode: bool = True) -> ProbeModel:
        """Set training mode, keeping a frozen encoder in eval mode (dropout off)."""
        super().train(mode)
        if self.frozen:
            self.visual.eval()  # a frozen encoder keeps inference behaviour (dropout off)
        return self

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits [batch, num_classes]; no gradients reach a frozen encoder."""
        if self.frozen:
            with torch.no_grad():
                tokens = self.visual(images)
        else:
            tokens = self.visual(images)
        return self.classify(self.pool(tokens.flatten(1).to(self.pool.weight.dtype)))
