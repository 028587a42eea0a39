"""Encoder loading and head shapes: random weights, local files, no-hub failures."""

from __future__ import annotations

import time

import pytest
import torch

from probes import encoder as enc
from probes.encoder import TINY_ARCH, EncoderError, ProbeModel, all_tokens, load_encoder

torch.set_num_threads(1)


@pytest.mark.parametrize(
    ("arch", "tokens", "width"), [("ViT-B-32", 50, 768), (TINY_ARCH, None, None)]
)
def test_head_flattens_every_token(arch: str, tokens: int | None, width: int | None) -> None:
    visual, _mean, _std = load_encoder(arch, None)
    model = ProbeModel(visual, frozen=True)
    images = torch.randn(2, 3, 224, 224)
    out_tokens = all_tokens(visual, images)
    if tokens is not None:  # ViT-B-32: the paper's [B, 50, 768] -> [B, 38400] -> 768 -> 2
        assert out_tokens.shape == (2, tokens, width)
    t, w = out_tokens.shape[1:]
    assert model.pool.in_features == t * w and model.pool.out_features == w
    assert model.classify.in_features == w and model.classify.out_features == 2
    assert model(images).shape == (2, 2)


def test_class_token_is_first_token() -> None:
    visual, _m, _s = load_encoder(TINY_ARCH, None)
    images = torch.randn(1, 3, 224, 224)
    visual.output_tokens = True  # type: ignore[assignment]  # open_clip attribute
    _pooled, patches = visual(images)
    # open_clip's own patch tokens are our tokens after the class token
    assert torch.allclose(all_tokens(visual, images)[:, 1:], patches, atol=1e-5)


def test_local_checkpoint_path_loads(tmp_path) -> None:
    import open_clip

    enc.register_probe_models()
    source = open_clip.create_model(TINY_ARCH)
    path = tmp_path / "tiny.pt"
    torch.save(source.state_dict(), path)
    visual, _m, _s = load_encoder(TINY_ARCH, str(path))
    for name, tensor in source.visual.state_dict().items():
        assert torch.equal(visual.state_dict()[name], tensor), name


def test_hub_tag_offline_fails_at_once(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(enc, "_cached_weights", lambda cfg, cache_dir: None)
    start = time.perf_counter()
    with pytest.raises(EncoderError, match="cannot be reached.*HF_HUB_OFFLINE"):
        load_encoder("ViT-B-32", "openai")
    assert time.perf_counter() - start < 5


def test_unreachable_host_is_reported_quickly(monkeypatch) -> None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(enc, "HUB_HOST", ("127.0.0.1", 9))  # discard port: refused locally
    start = time.perf_counter()
    reason = enc.hub_unreachable()
    assert reason is not None and "127.0.0.1" in reason
    assert time.perf_counter() - start < enc.HUB_PROBE_SECONDS + 1


@pytest.mark.parametrize("pretrained", ["no-such-tag", "/no/such/file.pt"])
def test_unknown_weights_name_the_input(pretrained: str) -> None:
    with pytest.raises(EncoderError, match="neither an existing file nor an open_clip tag"):
        load_encoder(TINY_ARCH, pretrained)


def test_unknown_arch_is_rejected() -> None:
    with pytest.raises(EncoderError, match="unknown open_clip arch"):
        load_encoder("No-Such-ViT", None)
