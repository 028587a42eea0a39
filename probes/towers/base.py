"""What every probed vision tower offers the probe head: tokens, their shape, its normalisation.

A tower takes images already normalised with its own `mean`/`std`, at the grid's image size,
and returns the token sequence the probe flattens, [batch, tokens, width]. Towers that only
accept one input size resize inside `forward`, as their image processor would.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

TokenNorm = Literal["none", "ln_post"]
TOKEN_NORMS: tuple[TokenNorm, ...] = ("none", "ln_post")
# NoReGeo App. B flattens "the transformer's output embeddings [B, 50, 768]" of CLIP ViT-B/32
# loaded with Hugging Face Transformers: CLIPVisionModel's last_hidden_state, to which HF
# applies no final layer norm (post_layernorm only touches the pooled class token).
PAPER_TOKEN_NORM: TokenNorm = "none"


class EncoderError(RuntimeError):
    """The encoder cannot be built: unknown arch, unknown tag, missing file, no hub access."""


class Tower(nn.Module):
    """A vision tower cut where the probe reads it; subclasses implement `forward`."""

    def __init__(self, mean: tuple[float, ...], std: tuple[float, ...], token_norm: TokenNorm):
        super().__init__()
        if token_norm not in TOKEN_NORMS:
            raise EncoderError(f"token norm {token_norm!r}: choose one of {', '.join(TOKEN_NORMS)}")
        self.mean = mean
        self.std = std
        self.token_norm = token_norm

    def token_shape(self, image_size: int) -> tuple[int, int]:
        """(tokens, width) of `forward` at this image size, from one blank image."""
        param = next(self.parameters())
        blank = torch.zeros(1, 3, image_size, image_size, device=param.device, dtype=param.dtype)
        was_training = self.training
        self.eval()
        with torch.no_grad():
            tokens = self(blank)
        self.train(was_training)
        return int(tokens.shape[1]), int(tokens.shape[2])
