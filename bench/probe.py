"""Probe training throughput per tower, beside the bare tower's forward + backward.

    .venv/bin/python bench/probe.py [--towers ProbeTiny-ViT-32,scratch:colour-moments,hf:DIR]
                                    [--no-hf-tiny] [--steps 20] [--batch 32] [--image-size 224]

For each tower (any encoder the registry `probes.towers` names, built with random weights;
by default the tiny open_clip ViT, the scratch tower of the smoke grid, and tiny random
SigLIP and Qwen2-VL towers built offline into a temporary folder, as the tests build them),
on the same batch of random images, one CPU thread:
- probe: a full training step of the unfrozen probe (tower + all-token head, cross-entropy,
  backward, AdamW step), as `probes.train.train_probe` runs it;
- tower: the bare tower's forward (its tokens) and backward, no head, no optimizer;
- ratio: tower images/s over probe images/s, i.e. how many times slower a probe step is than
  the tower alone (the head's flatten-all-tokens Linear and the optimizer are the difference).
Also rendering alone (full images to tensors), which feeds every step of a first epoch, and,
with a GPU, ViT-B-32 probe training in bf16.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from probes.data import draw_splits, image_tensor
from probes.encoder import TINY_ARCH, ProbeModel, load_encoder
from probes.towers import load_tower

DEFAULT_TOWERS = (TINY_ARCH, "scratch:colour-moments")


def images_per_s(step: Callable[[], None], batch: int, steps: int, device: torch.device) -> float:
    """Images/s of `step` over `steps` calls, after two warm-up calls."""
    for _ in range(2):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - start)


def probe_step(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, amp: bool
) -> Callable[[], None]:
    """One training step of a probe, as in probes.train.train_probe."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.train()

    def step() -> None:
        with torch.autocast(images.device.type, dtype=torch.bfloat16, enabled=amp):
            loss = nn.functional.cross_entropy(model(images).float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def tower_step(visual: nn.Module, images: torch.Tensor) -> Callable[[], None]:
    """Forward (the tower's tokens) and backward of the bare tower."""
    visual.train()

    def step() -> None:
        visual.zero_grad(set_to_none=True)
        visual(images).float().square().mean().backward()

    return step


def compare_tower(arch: str, batch: int, steps: int, size: int) -> tuple[float, float]:
    """(probe images/s, bare tower images/s) of `arch` on one random CPU batch."""
    cpu = torch.device("cpu")
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(batch, 3, size, size, generator=generator)
    labels = torch.randint(0, 2, (batch,), generator=generator)
    torch.manual_seed(0)
    model = ProbeModel(load_tower(arch, None, "none"), frozen=False, image_size=size)
    probe = images_per_s(probe_step(model, images, labels, amp=False), batch, steps, cpu)
    torch.manual_seed(0)
    tower = images_per_s(tower_step(load_tower(arch, None, "none"), images), batch, steps, cpu)
    return probe, tower


def tiny_hf_towers(folder: Path) -> dict[str, str]:
    """Tiny random SigLIP and Qwen2-VL checkpoints saved under `folder`: label -> `hf:` name."""
    from probes.towers.tiny import build_qwen2_vl, build_siglip

    return {
        "hf: tiny SigLIP": f"hf:{build_siglip(folder / 'siglip')}",
        "hf: tiny Qwen2-VL": f"hf:{build_qwen2_vl(folder / 'qwen2-vl')}",
    }


def render_images_per_s(size: int, count: int = 200) -> float:
    """Images/s of rendering full probe images to tensors (draws made beforehand)."""
    examples = draw_splits("C-BCT-CT", {"train": count}, 0)["train"]
    start = time.perf_counter()
    for e in examples:
        image_tensor(e.draw, "full", size)
    return count / (time.perf_counter() - start)


def main() -> None:
    """Print render speed, each tower's probe vs bare-tower CPU speed, then GPU ViT-B-32."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--towers", default=",".join(DEFAULT_TOWERS), help="comma-separated encoder names"
    )
    parser.add_argument(
        "--no-hf-tiny", action="store_true", help="skip the tiny random SigLIP and Qwen2-VL"
    )
    parser.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    parser.add_argument("--batch", type=int, default=32, help="images per step")
    parser.add_argument("--image-size", type=int, default=224, help="image side in pixels")
    args = parser.parse_args()
    torch.set_num_threads(1)
    size = args.image_size
    print(f"render {size} px full images: {render_images_per_s(size):.0f} images/s (1 thread)")
    print(f"{'tower (CPU, 1 thread)':28} {'probe img/s':>12} {'tower img/s':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as folder:
        towers = {t.strip(): t.strip() for t in args.towers.split(",") if t.strip()}
        if not args.no_hf_tiny:
            towers |= tiny_hf_towers(Path(folder))
        for label, arch in towers.items():
            probe, tower = compare_tower(arch, args.batch, args.steps, size)
            print(f"{label:28} {probe:12.0f} {tower:12.0f} {tower / probe:6.2f}")
    if not torch.cuda.is_available():
        print("ViT-B-32 GPU probe train (bf16 autocast): not measured: no GPU")
        return
    gpu = torch.device("cuda")
    images = torch.randn(args.batch, 3, 224, 224, device=gpu)
    labels = torch.randint(0, 2, (args.batch,), device=gpu)
    for frozen in (False, True):
        model = ProbeModel(load_encoder("ViT-B-32", None)[0], frozen=frozen).to(gpu)
        step = probe_step(model, images, labels, amp=True)
        rate = images_per_s(step, args.batch, args.steps * 5, gpu)
        kind = "frozen" if frozen else "unfrozen"
        print(f"ViT-B-32 {kind} GPU probe train bf16: {rate:.0f} images/s")


if __name__ == "__main__":
    main()
