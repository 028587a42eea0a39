"""The encoder registry: which vision tower an `arch` string names, checked and loaded.

- `open_clip:<arch>` (or a bare `<arch>`, the grids' original form): an open_clip
  VisionTransformer; `pretrained` is an open_clip tag, a weights file, or null (random).
- `hf:<repo, config name or path>`: the vision tower of a vision-language model through
  transformers (probes/towers/hf.py); `pretrained` is a revision, or null for the model
  config's (else main).
- `scratch:colour-moments`: a small from-scratch tower for CPU smoke grids
  (probes/towers/scratch.py); `pretrained` must be null.
- `imagenet:mobilenet_v2`: torchvision's MobileNetV2 (probes/towers/imagenet.py);
  `pretrained` is `imagenet1k-v1` (trained weights from a pinned package's file) or null.

`check_encoder` fails in seconds without loading weights (exit 2 at the CLI);
`load_tower` builds the tower a trial trains.
"""

from __future__ import annotations

from probes.towers.base import (
    PAPER_TOKEN_NORM,
    TOKEN_NORMS,
    EncoderError,
    TokenNorm,
    Tower,
)

KINDS = ("open_clip", "hf", "scratch", "imagenet")

__all__ = [
    "KINDS",
    "PAPER_TOKEN_NORM",
    "TOKEN_NORMS",
    "EncoderError",
    "TokenNorm",
    "Tower",
    "check_encoder",
    "load_tower",
    "parse_arch",
]


def parse_arch(arch: str) -> tuple[str, str]:
    """(kind, name) of an encoder string; no known prefix means open_clip."""
    kind, sep, name = arch.partition(":")
    if sep and kind in KINDS:
        if not name.strip():
            raise EncoderError(f"encoder {arch!r} names no model after '{kind}:'")
        return kind, name.strip()
    return "open_clip", arch


def check_encoder(arch: str, pretrained: str | None) -> None:
    """Raise EncoderError (one line naming the model and why) if the tower cannot load."""
    kind, name = parse_arch(arch)
    if kind == "open_clip":
        from probes.encoder import resolve_weights

        resolve_weights(name, pretrained)
        return
    if kind == "scratch":
        from probes.towers.scratch import check_scratch

        check_scratch(name, pretrained)
        return
    if kind == "imagenet":
        from probes.towers.imagenet import check_imagenet

        check_imagenet(name, pretrained)
        return
    from probes.towers.hf import check_source, resolve_source

    check_source(resolve_source(name, pretrained))


def load_tower(arch: str, pretrained: str | None, token_norm: TokenNorm) -> Tower:
    """The tower a probe trains: tokens in `forward`, its image mean/std on the module."""
    kind, name = parse_arch(arch)
    if kind == "open_clip":
        from probes.encoder import load_open_clip_tower

        return load_open_clip_tower(name, pretrained, token_norm)
    if kind == "scratch":
        from probes.towers.scratch import load_scratch_tower

        return load_scratch_tower(name, pretrained, token_norm)
    if kind == "imagenet":
        from probes.towers.imagenet import load_imagenet_tower

        return load_imagenet_tower(name, pretrained, token_norm)
    from probes.towers.hf import load_hf_tower

    return load_hf_tower(name, pretrained, token_norm)
