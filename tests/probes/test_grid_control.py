"""The shuffled-label control trial tests at chance, end to end through run_trial.

1000 test figures per image setup: if the probe's answers carry no information about the
labels, accuracy is Binomial(1000, 0.5) / 1000, std sqrt(0.25 / 1000) = 0.016, so the 0.05
margin is 3.2 std (a sound pipeline fails one setup's check with probability ~0.0016; the
seed is fixed, so the outcome is deterministic). A leak of test labels into training, or test
figures drawn from the training split, would show as a higher accuracy.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import torch
import yaml

import probes.grid as grid

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "probes" / "smoke.yaml"
TEST_FIGURES = 1000


@pytest.mark.slow
def test_shuffled_label_control_is_at_chance(tmp_path: Path) -> None:
    spec = yaml.safe_load(SMOKE.read_text())
    spec.update(tasks=["C-BCT-CT"], eval_tasks=None, configs=["UF"], regimes=["shuffled"])
    spec["data"].update(train=100, val=40, test=TEST_FIGURES)
    spec["train"].update(epochs=1)
    (trial,) = grid.expand(grid.GridSpec.model_validate(spec))
    torch.set_num_threads(1)
    rows = pl.read_parquet(grid.run_trial(trial, tmp_path))
    assert rows["regime"].to_list() == ["shuffled", "shuffled"]
    assert rows["n"].to_list() == [TEST_FIGURES, TEST_FIGURES]
    for accuracy in rows["accuracy"]:
        assert abs(accuracy - 0.5) <= 0.05
