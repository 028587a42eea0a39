"""`sweep --probes`: each evaluated model's own tower gets the probe grid; the dry run shows
the trials, what is done and what cannot run, and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import pipelines.cli as cli
from pipelines.engines.models.config_yaml import load_configs
from pipelines.sweep.probes import DEFAULT_GRID, model_grid
from probes.grid import expand, load_grid, trial_path
from tests.conftest import REPO

GRID = REPO / DEFAULT_GRID


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))


def _dry(out: Path, only: str, *extra: str) -> int:
    argv = ["sweep", "--out", str(out), "--tasks", "C-BCT-CT", "--per-task", "1", "--dry-run"]
    return cli.main([*argv, "--only", only, "--probes", str(GRID), *extra])


def _probe_lines(text: str) -> dict[str, str]:
    part = text.split("\nprobes (", 1)[1]
    return {line.split()[0]: line for line in part.splitlines()[2:] if line and line[0] != " "}


def test_dry_run_lists_each_evaluated_models_tower_trials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    only = "qwen2-vl-2b-instruct,smolvlm-instruct,gemma-3-4b-it,oracle"
    assert _dry(out, only, "--gpus", "1") == 0
    lines = _probe_lines(capsys.readouterr().out)
    trials = len(expand(load_grid(GRID)))
    for name, repo in [
        ("qwen2-vl-2b-instruct", "hf:Qwen/Qwen2-VL-2B-Instruct"),
        ("smolvlm-instruct", "hf:HuggingFaceTB/SmolVLM-Instruct"),
    ]:
        cells = lines[name].split()
        assert cells[1] == repo and cells[2:5] == [str(trials), "0", str(trials)]
        assert lines[name].endswith("will run")
    assert "oracle" not in lines  # evaluated, not a VLM
    assert "not probed: not in the grid's models" in lines["gemma-3-4b-it"]
    assert not out.exists()


def test_without_gpus_the_probes_are_listed_as_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _dry(tmp_path / "r", "qwen2-vl-2b-instruct", "--gpus", "0") == 0
    assert (
        "not run: needs 1 GPU(s)" in _probe_lines(capsys.readouterr().out)["qwen2-vl-2b-instruct"]
    )


def test_a_finished_trial_counts_as_done(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    (cfg,) = [c for c in load_configs(REPO / "configs" / "models") if c.name == "llava-1.5-7b"]
    trials = expand(model_grid(load_grid(GRID), cfg))
    done = trial_path(out, trials[0])
    done.parent.mkdir(parents=True)
    done.write_bytes(b"")
    assert _dry(out, "llava-1.5-7b", "--gpus", "1") == 0
    cells = _probe_lines(capsys.readouterr().out)["llava-1.5-7b"].split()
    assert cells[3:5] == ["1", str(len(trials) - 1)]


def test_every_grid_model_is_a_vlm_config() -> None:
    models = yaml.safe_load(GRID.read_text())["models"]
    configs = {c.name: c for c in load_configs(REPO / "configs" / "models")}
    assert models and all(configs[m].modality == "image-text" for m in models)
