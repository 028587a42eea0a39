"""`scratch:colour-moments`: a small from-scratch tower that can learn NoReGeo point relations
on a CPU in seconds, for smoke grids that must visibly learn.

Each image becomes 8 soft colour masks (Gaussian kernels around learnable RGB prototypes,
initialised at the corners of the RGB cube, with learnable widths), and each mask is pooled
into its normalised coordinate moments (x, y, x^2, y^2, xy, x^3, y^3, x+y, x-y, and its log
mass); an MLP maps them to one token. Why: the near-miss tasks differ by one grid unit
(about 2 px at 96 px), which a small conv net or ViT trained from scratch on a few thousand
figures never found (all at chance); positions pooled from a colour mask carry that unit
exactly, so a tower that learns which colour to pool (the points' red) can answer, e.g.,
U-SYM-ST in a few epochs.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from probes.towers.base import EncoderError, TokenNorm, Tower

SCRATCH_TOWERS = ("colour-moments",)
_PROTOTYPES = 8  # the corners of the RGB cube: black, blue, green, ..., white
_MOMENTS = 10  # log mass + the 9 coordinate monomials below
_WIDTH = 64
_HALF = (0.5, 0.5, 0.5)  # images reach the tower as (rgb - 0.5) / 0.5


def check_scratch(name: str, pretrained: str | None) -> None:
    """Raise EncoderError unless `name` is a scratch tower and no weights are named."""
    if name not in SCRATCH_TOWERS:
        raise EncoderError(f"scratch:{name}: unknown; valid: {', '.join(SCRATCH_TOWERS)}")
    if pretrained is not None:
        raise EncoderError(f"scratch:{name}: has no pretrained weights; set pretrained: null")


class ColourMomentTower(Tower):
    """Colour masks -> coordinate moments -> MLP; one token of width 64."""

    def __init__(self, token_norm: TokenNorm):
        super().__init__(_HALF, _HALF, token_norm)
        corners = [[(i >> 2) & 1, (i >> 1) & 1, i & 1] for i in range(_PROTOTYPES)]
        self.prototypes = nn.Parameter(torch.tensor(corners, dtype=torch.float32))
        self.log_widths = nn.Parameter(torch.full((_PROTOTYPES,), math.log(0.1)))
        self.norm = nn.BatchNorm1d(_PROTOTYPES * _MOMENTS)
        self.mlp = nn.Sequential(
            nn.Linear(_PROTOTYPES * _MOMENTS, _WIDTH),
            nn.ReLU(),
            nn.Linear(_WIDTH, _WIDTH),
            nn.ReLU(),
        )
        self.ln_post = nn.LayerNorm(_WIDTH) if token_norm == "ln_post" else nn.Identity()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Tokens [batch, 1, 64] of images normalised with mean = std = 0.5."""
        height, width = images.shape[-2:]
        ys = torch.linspace(-1, 1, height, device=images.device).view(height, 1)
        xs = torch.linspace(-1, 1, width, device=images.device).view(1, width)
        ys, xs = ys.expand(height, width), xs.expand(height, width)
        basis = torch.stack(
            [xs, ys, xs * xs, ys * ys, xs * ys, xs**3, ys**3, xs + ys, xs - ys]
        )  # [9, h, w]
        rgb = images * 0.5 + 0.5
        dist2 = (rgb[:, None] - self.prototypes.view(1, -1, 3, 1, 1)).pow(2).sum(2)
        masks = torch.exp(-dist2 / self.log_widths.exp().view(1, -1, 1, 1))  # [b, k, h, w]
        mass = masks.sum((2, 3)).clamp_min(1e-3)
        moments = torch.einsum("bkhw,phw->bkp", masks, basis) / mass[..., None]
        features = torch.cat([mass.log()[..., None], moments], -1).flatten(1)
        return self.ln_post(self.mlp(self.norm(features)))[:, None, :]


def load_scratch_tower(name: str, pretrained: str | None, token_norm: TokenNorm) -> Tower:
    """A freshly initialised scratch tower (the caller seeds torch)."""
    check_scratch(name, pretrained)
    return ColourMomentTower(token_norm)
