"""Probe datasets: balanced, seeded, disjoint splits; images in both setups."""

from __future__ import annotations

import pytest
import torch

from probes.data import PROBE_TASKS, SPLITS, ProbeImages, draw_splits

SIZES = {"train": 40, "val": 10, "test": 20}


@pytest.mark.parametrize("task", PROBE_TASKS)
def test_splits_are_balanced_and_disjoint(task: str) -> None:
    splits = draw_splits(task, SIZES, seed=3)
    geometries = {s: [e.draw.geometry_json() for e in splits[s]] for s in SPLITS}
    for split in SPLITS:
        labels = [e.label for e in splits[split]]
        assert len(labels) == SIZES[split] and sum(labels) == SIZES[split] // 2
        assert {str(e.draw.answer) for e in splits[split] if e.label == 1} == {"yes"}
    assert not set(geometries["train"]) & set(geometries["val"])
    assert not set(geometries["test"]) & (set(geometries["train"]) | set(geometries["val"]))


def test_splits_are_seeded() -> None:
    a, b = draw_splits("C-BCT-CT", SIZES, 1), draw_splits("C-BCT-CT", SIZES, 1)
    c = draw_splits("C-BCT-CT", SIZES, 2)
    same = [x.draw.geometry_json() for x in a["test"]] == [
        x.draw.geometry_json() for x in b["test"]
    ]
    other = [x.draw.geometry_json() for x in a["test"]] == [
        x.draw.geometry_json() for x in c["test"]
    ]
    assert same and not other


def test_odd_sizes_and_other_tasks_are_rejected() -> None:
    with pytest.raises(ValueError, match="even"):
        draw_splits("C-BCT-CT", {"train": 3}, 0)
    with pytest.raises(ValueError, match="not a probe task"):
        draw_splits("N-ECL-PPT", SIZES, 0)


def test_full_and_dot_images_differ() -> None:
    examples = draw_splits("U-CPR-CDT", {"train": 2}, 0)["train"]
    full = ProbeImages(examples, "F", 224, (0.5,) * 3, (0.5,) * 3)[0][0]
    dot = ProbeImages(examples, "D", 224, (0.5,) * 3, (0.5,) * 3)[0][0]
    assert full.shape == dot.shape == (3, 224, 224) and not torch.equal(full, dot)
