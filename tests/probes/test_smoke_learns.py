"""The smoke grid's scratch tower visibly learns U-SYM-ST, and its shuffled control does not.

Both trials run end to end through run_trial with the smoke grid's settings (seed 0, so the
outcome is deterministic). 200 test figures per image setup: a probe at chance scores
Binomial(200, 0.5) / 200, std sqrt(0.25 / 200) = 0.035, so 0.75 is 7 std above chance, and
the shuffled trial's 0.05 margin is 1.4 std (a fixed seed makes it pass or fail for good;
test_grid_control.py checks the control on 1000 figures with a 3.2 std margin).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import torch
import yaml

import probes.grid as grid

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "probes" / "smoke.yaml"


def _accuracy(regime: str, tmp_path: Path) -> pl.DataFrame:
    spec = yaml.safe_load(SMOKE.read_text())
    spec.update(tasks=["U-SYM-ST"], eval_tasks=None, configs=["UF"], regimes=[regime])
    (trial,) = grid.expand(grid.GridSpec.model_validate(spec))
    torch.set_num_threads(1)
    return pl.read_parquet(grid.run_trial(trial, tmp_path / regime))


@pytest.mark.slow
def test_scratch_tower_learns_and_shuffled_control_stays_at_chance(tmp_path: Path) -> None:
    learner = _accuracy("separate", tmp_path)
    control = _accuracy("shuffled", tmp_path)
    # Trained on full images; the dotted test is transfer, so only the full one is asserted.
    full = learner.filter(pl.col("eval_setup") == "F")
    assert full.height == 1 and full["accuracy"][0] >= 0.75, learner
    for accuracy in control["accuracy"]:
        assert abs(accuracy - 0.5) <= 0.05, control


def test_scratch_tower_is_checked_before_loading() -> None:
    from probes.towers import EncoderError, check_encoder, load_tower

    check_encoder("scratch:colour-moments", None)
    with pytest.raises(EncoderError, match="scratch:nope: unknown"):
        check_encoder("scratch:nope", None)
    with pytest.raises(EncoderError, match="no pretrained weights"):
        check_encoder("scratch:colour-moments", "openai")
    assert load_tower("scratch:colour-moments", None, "none").token_shape(96) == (1, 64)
