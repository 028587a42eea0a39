"""The shuffled-label control and the conv-stem tiny encoder, without training."""

from __future__ import annotations

import polars as pl
import torch

from probes.data import draw_splits, shuffle_labels
from probes.tables import table4

torch.set_num_threads(1)


def test_shuffled_labels_keep_figures_and_balance_but_not_the_labels() -> None:
    tasks = ("C-BCT-CT", "U-SYM-ST")
    examples = [e for t in tasks for e in draw_splits(t, {"train": 40}, 0)["train"]]
    shuffled = shuffle_labels(examples, 0, "train")
    assert [e.draw for e in shuffled] == [e.draw for e in examples]
    for task in tasks:
        labels = [e.label for e in shuffled if e.task == task]
        assert sum(labels) == len(labels) // 2  # still balanced within each task
    agree = sum(a.label == b.label for a, b in zip(examples, shuffled, strict=True))
    assert agree < 0.8 * len(examples)  # a permutation that moved most labels
    assert shuffle_labels(examples, 0, "train") == shuffled  # seeded
    assert shuffle_labels(examples, 0, "val") != shuffled  # each split its own permutation


def test_table4_has_a_shuffled_labels_row_after_separate() -> None:
    rows = [
        {"regime": r, "train_tasks": t, "config": "UF", "eval_task": "C-BCT-CT",
         "eval_setup": s, "acc": acc}
        for r, t, acc in (("joint", "All", 80.0), ("separate", "C-BCT-CT", 90.0),
                          ("shuffled", "C-BCT-CT", 50.0))
        for s in ("F", "D")
    ]  # fmt: skip
    t4 = table4(pl.DataFrame(rows))
    assert t4.select("Train DS", "AllF").rows() == [
        ("All", 80.0),
        ("Separate", 90.0),
        ("Shuffled labels", 50.0),
    ]
