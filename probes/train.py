"""Train one probe: AdamW + cross-entropy, early stopping on validation F1 (paper App. B).

Reads top to bottom: the config, two metric helpers, then `train_probe` with one loop.
Validation (macro F1) runs every `eval_every` steps and at the end of each epoch; the
best-F1 weights are copied to CPU and restored when training stops (patience spent or
epochs done).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn
from torch.utils.data import DataLoader


class TrainConfig(BaseModel):
    """Optimisation settings of one probe; the defaults are the paper's (Table 7).

    Also a grid's `train:` section (probes.grid.GridSpec), where `seed` is the grid's
    `data.seed`.
    """

    model_config = ConfigDict(extra="forbid")
    lr: float = Field(default=2e-6, description="AdamW learning rate")
    weight_decay: float = Field(default=0.01, description="AdamW weight decay")
    epochs: int = Field(default=2, description="passes over the training set")
    batch_size: int = Field(default=32, description="images per step")
    eval_every: int = Field(
        default=100, description="steps between validation passes (plus one per epoch end)"
    )
    patience: int = Field(default=5, description="validation passes without better F1 to stop")
    amp: bool = Field(default=True, description="bf16 autocast, CUDA only")
    seed: int = Field(default=0, description="torch seed at the start of training")
    num_workers: int = Field(default=0, description="DataLoader render workers")


@dataclass
class TrainResult:
    """What training did, with the config that produced it."""

    config: dict[str, Any]
    best_val_f1: float
    best_step: int
    steps: int
    stopped_early: bool
    seconds: float
    images_per_s: float
    history: list[dict[str, float]] = field(default_factory=list)


def binary_metrics(preds: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """Accuracy and macro F1 (the mean of the yes and no classes' F1).

    Macro, not positive-class, F1: a probe that answers "yes" to everything scores 0.67 on
    balanced data by positive-class F1, enough to win early stopping, but 0.33 by macro F1.

    >>> binary_metrics(torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 0, 0]))
    {'accuracy': 0.75, 'f1': 0.7333333333333334}
    """
    f1s = []
    for positive in (1, 0):
        tp = int(((preds == positive) & (labels == positive)).sum())
        wrong = int((preds != labels).sum())
        f1s.append(2 * tp / (2 * tp + wrong) if tp else 0.0)
    accuracy = float((preds == labels).float().mean()) if len(labels) else 0.0
    return {"accuracy": accuracy, "f1": sum(f1s) / 2}


def _autocast(device: torch.device, amp: bool) -> Any:
    # bf16 needs no loss scaler, which keeps the loop plain; CPU runs stay in fp32.
    enabled = amp and device.type == "cuda"
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


def _cpu_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


@torch.no_grad()
def predict(
    model: nn.Module, loader: DataLoader, device: torch.device, amp: bool
) -> dict[str, Any]:
    """Predictions over a loader: metrics, count and the predicted labels."""
    was_training = model.training
    model.eval()
    preds, labels = [], []
    for images, y in loader:
        with _autocast(device, amp):
            logits = model(images.to(device, non_blocking=True))
        preds.append(logits.argmax(-1).cpu())
        labels.append(torch.as_tensor(y))
    model.train(was_training)
    p, t = torch.cat(preds), torch.cat(labels)
    return {**binary_metrics(p, t), "n": len(t), "preds": p}


def train_probe(
    model: nn.Module,
    train_loader: DataLoader,
    val_loader: DataLoader,
    cfg: TrainConfig,
    device: torch.device,
    log_dir: Path | None = None,
) -> TrainResult:
    """Train `model` in place; on return it holds the best-validation-F1 weights."""
    torch.manual_seed(cfg.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    writer = None
    if log_dir is not None:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(log_dir))

    def validate(step: int) -> float:
        metrics = predict(model, val_loader, device, cfg.amp)
        history.append({"step": step, "val_f1": metrics["f1"], "val_acc": metrics["accuracy"]})
        if writer:
            writer.add_scalar("val/f1", metrics["f1"], step)
            writer.add_scalar("val/accuracy", metrics["accuracy"], step)
        return float(metrics["f1"])

    # Step 0 is a candidate too: if training only hurts, the untrained head is kept.
    history: list[dict[str, float]] = []
    best_f1, best_step = validate(0), 0
    best_state = _cpu_copy(model)
    step, bad_evals, stopped, images = 0, 0, False, 0
    start = time.perf_counter()
    model.train()
    for epoch in range(cfg.epochs):
        for batch, (x, y) in enumerate(train_loader):
            with _autocast(device, cfg.amp):
                logits = model(x.to(device, non_blocking=True))
                loss = loss_fn(logits.float(), torch.as_tensor(y).to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step, images = step + 1, images + len(y)
            if writer:
                writer.add_scalar("train/loss", loss.item(), step)
            if step % cfg.eval_every and batch + 1 < len(train_loader):
                continue
            f1 = validate(step)
            if f1 > best_f1:
                best_f1, best_step, bad_evals = f1, step, 0
                best_state = _cpu_copy(model)
            else:
                bad_evals += 1
            if bad_evals >= cfg.patience:
                stopped = True
                break
        if stopped:
            break
        if writer:
            writer.add_scalar("train/epoch", epoch + 1, step)
    seconds = time.perf_counter() - start
    model.load_state_dict(best_state)
    if writer:
        writer.add_scalar("val/best_f1", best_f1, best_step)
        writer.close()
    return TrainResult(
        config=cfg.model_dump(),
        best_val_f1=best_f1,
        best_step=best_step,
        steps=step,
        stopped_early=stopped,
        seconds=seconds,
        images_per_s=images / seconds if seconds > 0 else 0.0,
        history=history,
    )
