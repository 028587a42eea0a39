"""Probe training throughput: images/s of forward + backward + AdamW step.

    .venv/bin/python bench/probe.py [--steps 20] [--batch 32]

Measures the tiny ViT on CPU (one thread) with pre-rendered images, plus rendering alone
(224 px, RGB tensor), and ViT-B-32 with bf16 autocast when CUDA is available.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from probes.data import draw_splits, image_tensor
from probes.encoder import TINY_ARCH, ProbeModel, load_encoder


def train_images_per_s(
    model: nn.Module, device: torch.device, batch: int, steps: int, amp: bool
) -> float:
    """Images/s of full training steps on random images (after two warm-up steps)."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    images = torch.randn(batch, 3, 224, 224, device=device)
    labels = torch.randint(0, 2, (batch,), device=device)
    model.train()
    for step in range(steps + 2):
        if step == 2:
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = nn.functional.cross_entropy(model(images).float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - start)


def render_images_per_s(count: int = 200) -> float:
    """Images/s of rendering 224-px full probe images to tensors (draws made beforehand)."""
    examples = draw_splits("C-BCT-CT", {"train": count}, 0)["train"]
    start = time.perf_counter()
    for e in examples:
        image_tensor(e.draw, "full", 224)
    return count / (time.perf_counter() - start)


def main() -> None:
    """Print render speed, then tiny-ViT CPU and (with a GPU) ViT-B-32 training speed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cpu = torch.device("cpu")
    print(f"render 224 px full images: {render_images_per_s():.0f} images/s (1 thread)")
    for frozen in (False, True):
        torch.manual_seed(0)
        model = ProbeModel(load_encoder(TINY_ARCH, None)[0], frozen=frozen)
        rate = train_images_per_s(model, cpu, args.batch, args.steps, amp=False)
        print(f"{TINY_ARCH} {'frozen' if frozen else 'unfrozen'} CPU train: {rate:.0f} images/s")
    if not torch.cuda.is_available():
        print("ViT-B-32 GPU train (bf16 autocast): not measured: no GPU")
        return
    gpu = torch.device("cuda")
    for frozen in (False, True):
        model = ProbeModel(load_encoder("ViT-B-32", None)[0], frozen=frozen).to(gpu)
        rate = train_images_per_s(model, gpu, args.batch, args.steps * 5, amp=True)
        print(f"ViT-B-32 {'frozen' if frozen else 'unfrozen'} GPU train bf16: {rate:.0f} images/s")


if __name__ == "__main__":
    main()
