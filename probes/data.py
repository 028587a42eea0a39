"""Probe datasets: the eight binary NoReGeo tasks drawn on the fly, rendered at 224 px.

Splits are disjoint by construction: each (task, split) draws from its own seed stream
(`item_seed(seed, task, "probe-<split>")`), and any draw whose geometry already appeared in
an earlier split (train, then val, then test) is skipped, so no figure is both trained on
and tested on. Each split takes the first draws that keep yes/no exactly balanced.
Labels: yes = 1, no = 0.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch.utils.data import Dataset

from geometry.figure import Draw
from geometry.items import item_seed, task_draws
from geometry.render import render_image
from geometry.tasks.registry import get_task

PROBE_TASKS = (
    "C-BCT-CT",  # collinearity
    "U-CPR-CDT",  # circle_diameter
    "U-SCP-STT",  # semicircle_triangle
    "U-PAP-PLT",  # parallel_lines
    "U-PAP-PT",  # perpendicular
    "U-PAP-RAT",  # right_angle
    "C-SYM-SST",  # shape_symmetry
    "U-SYM-ST",  # symmetry
)
SPLITS = ("train", "val", "test")
SETUP_OF_SUBSCRIPT = {"F": "full", "D": "dotted"}  # the paper's subscripts -> renderer setups
LABELS = {"yes": 1, "no": 0}
# Draw this many times the requested count before giving up on finding enough new figures.
OVERDRAW = 3


@dataclass(frozen=True)
class Example:
    """One labelled figure of one task."""

    task: str
    draw: Draw
    label: int


def _check_task(task_id: str) -> None:
    if task_id not in PROBE_TASKS:
        raise ValueError(f"{task_id!r} is not a probe task; valid: {', '.join(PROBE_TASKS)}")


def draw_splits(task_id: str, sizes: dict[str, int], seed: int) -> dict[str, list[Example]]:
    """Balanced examples of one task per split; no geometry appears in two splits."""
    _check_task(task_id)
    task = get_task(task_id)
    seen: set[str] = set()
    out: dict[str, list[Example]] = {}
    for split in SPLITS:
        count = sizes.get(split, 0)
        if count % 2:
            raise ValueError(f"{split} size {count} must be even to balance yes/no")
        stream = item_seed(seed, task_id, f"probe-{split}")
        draws = [d for d, _pair, _s in task_draws(task.task_id, OVERDRAW * count, stream)]
        chosen = _balanced_new(task_id, draws, count, seen)
        if len(chosen) < count:
            raise RuntimeError(
                f"{task_id} {split}: only {len(chosen)} of {count} new figures in "
                f"{OVERDRAW * count} draws; the generator space may be too small for this size"
            )
        seen.update(e.draw.geometry_json() for e in chosen)
        out[split] = chosen
    return out


def _balanced_new(task_id: str, draws: Iterable[Draw], count: int, seen: set[str]) -> list[Example]:
    per_label = {0: 0, 1: 0}
    chosen: list[Example] = []
    for draw in draws:
        if len(chosen) == count:
            break
        label = LABELS[str(draw.answer)]
        if draw.geometry_json() in seen or per_label[label] == count // 2:
            continue
        per_label[label] += 1
        chosen.append(Example(task_id, draw, label))
    return chosen


def task_splits(
    task_ids: Sequence[str], sizes: dict[str, int], seed: int
) -> dict[str, dict[str, list[Example]]]:
    """`draw_splits` for each task: {task: {split: examples}}."""
    return {t: draw_splits(t, sizes, seed) for t in task_ids}


def shuffle_labels(examples: Sequence[Example], seed: int, split: str) -> list[Example]:
    """The examples with their labels permuted at random within each task (a control).

    A permutation keeps each task's yes/no counts, so the split stays balanced, and the
    labels it hands out are independent of the figures: a probe trained on them can learn
    nothing about the task, and on a balanced test set its expected accuracy is 0.5.
    """
    out = list(examples)
    for task in dict.fromkeys(e.task for e in out):
        where = [i for i, e in enumerate(out) if e.task == task]
        labels = [out[i].label for i in where]
        random.Random(f"{seed}-{task}-{split}-shuffled-labels").shuffle(labels)
        for i, label in zip(where, labels, strict=True):
            out[i] = replace(out[i], label=label)
    return out


def image_tensor(draw: Draw, setup: str, size: int) -> torch.Tensor:
    """The figure as a uint8 [3, size, size] tensor."""
    rgb = np.asarray(render_image(draw, setup, size).convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(rgb.copy()).permute(2, 0, 1)


def normalise(
    pixels: torch.Tensor, mean: Sequence[float] | torch.Tensor, std: Sequence[float] | torch.Tensor
) -> torch.Tensor:
    """uint8 RGB [..., 3, H, W] as the float input a tower expects: scaled to 0-1, then each
    channel less the tower's `mean`, over its `std`."""
    mean_t = torch.as_tensor(mean, dtype=torch.float32).view(3, 1, 1)
    std_t = torch.as_tensor(std, dtype=torch.float32).view(3, 1, 1)
    return (pixels.float() / 255.0 - mean_t) / std_t


class ProbeImages(Dataset[tuple[torch.Tensor, int]]):
    """Normalised images and labels of `examples` in one image setup ("F" or "D").

    Images are rendered on first use and kept as uint8 (150 KB each at 224 px), so later
    epochs and the second evaluation skip the renderer.
    """

    def __init__(
        self,
        examples: Sequence[Example],
        setup: str,
        size: int,
        mean: Sequence[float],
        std: Sequence[float],
        cache: bool = True,
    ):
        if setup not in SETUP_OF_SUBSCRIPT:
            valid = ", ".join(SETUP_OF_SUBSCRIPT)
            raise ValueError(f"image setup {setup!r}; valid: {valid}")
        self.examples = list(examples)
        self.setup = SETUP_OF_SUBSCRIPT[setup]
        self.size = size
        self.mean = torch.tensor(mean).view(3, 1, 1)
        self.std = torch.tensor(std).view(3, 1, 1)
        self.cache: dict[int, torch.Tensor] | None = {} if cache else None

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        example = self.examples[index]
        pixels = self.cache.get(index) if self.cache is not None else None
        if pixels is None:
            pixels = image_tensor(example.draw, self.setup, self.size)
            if self.cache is not None:
                self.cache[index] = pixels
        return normalise(pixels, self.mean, self.std), example.label
