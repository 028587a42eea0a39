"""`pipelines.geobuild.loop.sweep_model`, the sweep's GeoBuild entry: baselines write nothing,
a missing data set is a clear error, and a tiny hf model runs one problem for one round."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import pipelines.cli as cli
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.geobuild.loop import sweep_model
from tests.conftest import SHARED

DATA = SHARED / "geobuildbench"


def test_baseline_writes_nothing_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sweep_model(resolve_model("oracle", "oracle"), tmp_path, 1) == 0
    assert "GeoBuild not run for oracle" in capsys.readouterr().out
    assert not (tmp_path / "geobuild").exists()


def test_missing_data_set_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEOBUILD_DATASET", str(tmp_path / "nowhere"))
    cfg = resolve_model("hf", "tiny-llm")
    with pytest.raises(FileNotFoundError, match="GEOBUILD_DATASET"):
        sweep_model(cfg, tmp_path / "out", 1)


@pytest.mark.skipif(not DATA.is_dir(), reason=f"GeoBuild data not at {DATA}")
def test_tiny_lm_runs_one_problem_one_round(
    ray_local, tiny_llm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEOBUILD_DATASET", raising=False)  # the default location
    cfg = resolve_model("hf", str(tiny_llm_dir))
    out = tmp_path / "results"
    assert sweep_model(cfg, out, 1, max_rounds=1, max_tokens=16) == 1
    files = sorted(out.glob("geobuild/model=*/round=*/part-*.parquet"))
    assert [f.parent.name for f in files] == ["round=1"]
    rows = pl.read_parquet(files)
    assert rows.height == 1 and rows["model"].to_list() == [cfg.name]
    assert rows["engine"].to_list() == ["hf"]
    # Started again, the round already holds the problem: nothing new.
    assert sweep_model(cfg, out, 1, max_rounds=1, max_tokens=16) == 0


def test_sweep_geobuild_only_leaves_baselines_without_rows(ray_local, tmp_path: Path) -> None:
    """A GeoBuild-only sweep lists a baseline as not run, with the reason, and writes nothing."""
    out = tmp_path / "results"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
        argv = ["sweep", "--out", str(out), "--benchmarks", "geobuild", "--only", "oracle"]
        assert cli.main([*argv, "--progress-interval", "5"]) == 0
    status = json.loads((out / "sweep" / "status.json").read_text())
    assert status["geobuild"] is None  # sweep_model was found
    assert status["states"] == {"oracle": "not run: answer baselines have no GeoBuild program"}
    assert not (out / "geobuild").exists()
