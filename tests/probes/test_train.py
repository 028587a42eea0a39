"""The training loop: frozen encoders stay put, early stopping keeps the best-F1 weights."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from probes.encoder import TINY_ARCH, ProbeModel, load_encoder
from probes.train import TrainConfig, predict, train_probe

torch.set_num_threads(1)
CPU = torch.device("cpu")


def _bright_vs_dark(n: int, seed: int, flip: bool = False) -> DataLoader:
    """Images whose label is their brightness: separable by any working probe."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 2
    images = torch.randn(n, 3, 224, 224, generator=g) * 0.5 + (labels.float() * 2 - 1).view(
        -1, 1, 1, 1
    )
    return DataLoader(TensorDataset(images, 1 - labels if flip else labels), batch_size=16)


def _model(frozen: bool) -> ProbeModel:
    torch.manual_seed(0)
    visual, _m, _s = load_encoder(TINY_ARCH, None)
    return ProbeModel(visual, frozen=frozen)


def test_frozen_encoder_is_bit_identical_after_training() -> None:
    model = _model(frozen=True)
    before = {k: v.clone() for k, v in model.visual.state_dict().items()}
    head_before = model.pool.weight.clone()
    train_probe(
        model, _bright_vs_dark(32, 0), _bright_vs_dark(16, 1), TrainConfig(lr=1e-3, epochs=1), CPU
    )
    assert all(torch.equal(v, model.visual.state_dict()[k]) for k, v in before.items())
    assert not torch.equal(head_before, model.pool.weight)


def test_unfrozen_encoder_changes() -> None:
    model = _model(frozen=False)
    before = {k: v.clone() for k, v in model.visual.state_dict().items()}
    train_probe(
        model, _bright_vs_dark(32, 0), _bright_vs_dark(16, 1), TrainConfig(lr=1e-3, epochs=1), CPU
    )
    changed = [k for k, v in before.items() if not torch.equal(v, model.visual.state_dict()[k])]
    assert "visual.conv1.weight" in changed and len(changed) > len(before) // 2


def test_probe_learns_a_separable_signal() -> None:
    model = _model(frozen=True)
    cfg = TrainConfig(lr=1e-3, epochs=3, eval_every=4)
    result = train_probe(model, _bright_vs_dark(64, 0), _bright_vs_dark(32, 1), cfg, CPU)
    assert predict(model, _bright_vs_dark(64, 2), CPU, amp=False)["accuracy"] >= 0.9
    assert result.best_val_f1 >= 0.9


def test_early_stopping_restores_best_f1_weights() -> None:
    # Validation labels are the training labels flipped: the better the probe fits training
    # data, the worse its validation F1, so F1 peaks early and training must roll back.
    model = _model(frozen=True)
    val = _bright_vs_dark(32, 1, flip=True)
    cfg = TrainConfig(lr=1e-3, epochs=4, eval_every=2, patience=3)
    result = train_probe(model, _bright_vs_dark(64, 0), val, cfg, CPU)
    f1s = [h["val_f1"] for h in result.history]
    assert result.stopped_early and result.steps < cfg.epochs * 4
    assert result.best_val_f1 == max(f1s) > f1s[-1]
    assert predict(model, val, CPU, amp=False)["f1"] == result.best_val_f1
