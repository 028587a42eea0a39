"""Grid YAMLs: the train section is probes.train.TrainConfig, seeded by the grid's data.seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from pydantic import ValidationError

import probes.grid as grid
from probes.train import TrainConfig

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "probes"


def _smoke(**data: int) -> dict[str, Any]:
    spec = yaml.safe_load((CONFIGS / "smoke.yaml").read_text())
    spec["data"].update(data)
    return spec


@pytest.mark.parametrize("name", ["smoke", "paper"])
def test_grid_yamls_load_with_train_seed_from_data(name: str) -> None:
    spec = grid.load_grid(CONFIGS / f"{name}.yaml")
    assert spec.train.seed == spec.data.seed
    for trial in grid.expand(spec):
        assert "seed" not in dict(trial.train)  # the seed is hashed once, in data


def test_train_seed_follows_data_seed_and_a_second_seed_is_refused() -> None:
    assert grid.GridSpec.model_validate(_smoke(seed=7)).train.seed == 7
    same = _smoke(seed=7)
    same["train"]["seed"] = 7
    assert grid.GridSpec.model_validate(same).train.seed == 7
    other = _smoke(seed=7)
    other["train"]["seed"] = 3
    with pytest.raises(ValidationError, match="differs from data.seed"):
        grid.GridSpec.model_validate(other)


def test_unset_train_fields_are_the_paper_defaults() -> None:
    spec = _smoke()
    del spec["train"]
    assert grid.GridSpec.model_validate(spec).train == TrainConfig()


def test_run_trial_trains_with_the_grid_settings(tmp_path: Path, monkeypatch) -> None:
    spec = grid.GridSpec.model_validate(_smoke(train=2, val=2, test=2, seed=5))
    seen: list[TrainConfig] = []

    class Stop(Exception):
        pass

    def fake_train(model: Any, train: Any, val: Any, cfg: TrainConfig, *rest: Any) -> None:
        seen.append(cfg)
        raise Stop

    monkeypatch.setattr(grid, "train_probe", fake_train)
    torch.set_num_threads(1)
    with pytest.raises(Stop):
        grid.run_trial(grid.expand(spec)[0], tmp_path)
    assert seen == [spec.train] and seen[0].seed == 5


def test_probe_run_records_the_resolved_grid(tmp_path: Path, monkeypatch) -> None:
    import pipelines.cli as cli
    import pipelines.probes.grid as command

    ran: list[grid.Trial] = []
    monkeypatch.setattr(command, "run_trial", lambda trial, out: ran.append(trial))
    smoke = CONFIGS / "smoke.yaml"
    argv = ["probe", "--grid", str(smoke), "--out", str(tmp_path), "--executor", "local"]
    assert cli.main(argv) == 0
    spec = grid.load_grid(smoke)
    assert ran == grid.expand(spec)
    (path,) = (grid.encoder_dir(tmp_path, spec.encoder.arch, None) / "runs").glob("*.json")
    record = json.loads(path.read_text())
    assert grid.GridSpec.model_validate(record["grid"]) == spec
    assert record["trials"] == record["trials_to_run"] == len(ran)


def test_a_trial_starts_from_the_same_weights_whatever_ran_before(
    tmp_path: Path, monkeypatch
) -> None:
    # A Ray worker runs trials one after another: what an earlier trial drew from torch's
    # RNG must not change the next one's randomly initialised encoder or head.
    spec = grid.GridSpec.model_validate(_smoke(train=2, val=2, test=2, seed=5))
    starts: list[list[torch.Tensor]] = []

    class Stop(Exception):
        pass

    def fake_train(model: Any, *rest: Any) -> None:
        starts.append([p.detach().clone() for p in model.parameters()])
        raise Stop

    monkeypatch.setattr(grid, "train_probe", fake_train)
    torch.set_num_threads(1)
    trial = grid.expand(spec)[0]
    for _ in range(2):
        with pytest.raises(Stop):
            grid.run_trial(trial, tmp_path)
        torch.rand(1000)  # what another trial in the same process would draw
    first, second = starts
    assert len(first) == len(second) > 2  # the encoder's tensors and the head's
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))


def test_shuffled_regime_trains_and_validates_on_permuted_labels(
    tmp_path: Path, monkeypatch
) -> None:
    from probes.data import task_splits

    spec = grid.GridSpec.model_validate(
        {**_smoke(train=40, val=20, test=2, seed=5), "regimes": ["separate", "shuffled"]}
    )
    trials = {t.regime: t for t in grid.expand(spec) if t.config == "UF" and t.label == "C-SYM-SST"}
    seen: dict[str, tuple[list[int], list[int]]] = {}

    class Stop(Exception):
        pass

    def fake_train(model: Any, train: Any, val: Any, *rest: Any) -> None:
        labels = ([e.label for e in train.dataset.examples],
                  [e.label for e in val.dataset.examples])  # fmt: skip
        seen["shuffled" if "separate" in seen else "separate"] = labels
        raise Stop

    monkeypatch.setattr(grid, "train_probe", fake_train)
    torch.set_num_threads(1)
    for regime in ("separate", "shuffled"):  # in this order: fake_train names them so
        with pytest.raises(Stop):
            grid.run_trial(trials[regime], tmp_path)
    truth = task_splits(["C-SYM-SST"], {"train": 40, "val": 20, "test": 2}, 5)["C-SYM-SST"]
    assert seen["separate"] == ([e.label for e in truth["train"]], [e.label for e in truth["val"]])
    for got, true in zip(seen["shuffled"], seen["separate"], strict=True):
        assert sorted(got) == sorted(true) and got != true  # permuted, still balanced
    assert trials["shuffled"].trial_id != trials["separate"].trial_id
