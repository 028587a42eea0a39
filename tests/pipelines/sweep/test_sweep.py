"""`sweep` locally: dry run writes nothing; runs what can run; lists the rest; resumes."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import pipelines.cli as cli
from pipelines.noregeo.summarize import load_results

TASKS = "C-BCT-CT,U-PAP-PT"


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GEOSEE_TINY_LLM", raising=False)


def _sweep(out: Path, *extra: str) -> int:
    args = ["sweep", "--out", str(out), "--tasks", TASKS, "--per-task", "2", *extra]
    return cli.main([*args, "--progress-interval", "5"])


def test_dry_run_prints_the_plan_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _sweep(out, "--dry-run", "--gpus", "0") == 0
    text = capsys.readouterr().out
    assert "not run: $OPENAI_API_KEY is not set" in text
    assert "not run: needs 4 GPU(s)" in text  # the 70B models
    assert "assumptions:" in text and "A100-hours" in text
    assert not out.exists()


def test_dry_run_without_a_cluster_plans_for_this_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine without GPUs, a dry run naming no cluster says the vLLM models will not
    run here (it said "will run", planning for unlimited GPUs)."""
    from pipelines.sweep import capacity

    monkeypatch.setattr(capacity, "BOOTSTRAP_CONFIG", tmp_path / "absent.yaml")
    monkeypatch.setattr(capacity, "gpus_on_this_machine", lambda: 0)
    assert _sweep(tmp_path / "r", "--dry-run", "--only", "oracle,qwen3-8b") == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln.strip()}
    assert lines["oracle"].rstrip().endswith("will run")
    assert "not run: needs 1 GPU(s)" in lines["qwen3-8b"]
    assert "--cluster-config" in lines["qwen3-8b"]


def test_dry_run_gpu_hours_grow_with_model_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = "qwen2.5-7b-instruct,qwen2.5-72b-instruct"
    args = ["sweep", "--out", str(tmp_path / "r"), "--dry-run", "--only", only]
    assert cli.main(args) == 0
    lines = {ln.split()[0]: ln.split() for ln in capsys.readouterr().out.splitlines() if ln}
    # 10x the FLOPs per token and 4x the engine-start GPU time (TP 4): over 4x the GPU-hours.
    assert float(lines["qwen2.5-72b-instruct"][6]) > 4 * float(lines["qwen2.5-7b-instruct"][6]) > 0


def test_sweep_runs_local_models_lists_the_rest_and_resumes(ray_local, tmp_path: Path) -> None:
    out = tmp_path / "results"
    only = "oracle,tiny-llm,gpt-4.1,qwen3-8b"
    assert _sweep(out, "--only", only) == 0
    status = json.loads((out / "sweep" / "status.json").read_text())["states"]
    assert status["oracle"] == "done" and status["tiny-llm"] == "done"
    assert status["gpt-4.1"].startswith("not run")
    assert status["qwen3-8b"].startswith("not run: needs 1 GPU")
    oracle = load_results(out, model="oracle")
    assert oracle.height == 2 * 2 * 3  # tasks x per-task x setups
    assert oracle["correct"].all()
    tiny = load_results(out, model="tiny-llm")
    assert tiny.height == 2 * 2 and set(tiny["setup"]) == {"text"}
    noregeo = out / "noregeo"
    assert sorted(p.name for p in noregeo.iterdir()) == ["model=oracle", "model=tiny-llm"]

    shards = sorted(noregeo.rglob("part-*.parquet"))
    stamps = [p.stat().st_mtime_ns for p in shards]
    assert _sweep(out, "--only", only) == 0  # finished setups are skipped: nothing rewritten
    assert sorted(noregeo.rglob("part-*.parquet")) == shards
    assert [p.stat().st_mtime_ns for p in shards] == stamps
    again = pl.concat([load_results(out, model="oracle"), load_results(out, model="tiny-llm")])
    assert again["request_key"].n_unique() == again.height == 12 + 4


def test_unknown_model_name_is_a_usage_error(tmp_path: Path) -> None:
    assert _sweep(tmp_path / "r", "--only", "no-such-model", "--dry-run") == 2


def test_a_model_whose_rows_are_mostly_engine_errors_fails_the_sweep(
    ray_local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.engines.models.tiny_model import build_tiny_model

    # 64 positions: every prompt fills the context, so every row is an engine error.
    short = build_tiny_model("llm", tmp_path / "short", max_positions=64)
    monkeypatch.setenv("GEOSEE_TINY_LLM", str(short))
    out = tmp_path / "results"
    assert _sweep(out, "--only", "tiny-llm") == 1
    state = json.loads((out / "sweep" / "status.json").read_text())["states"]["tiny-llm"]
    assert state.startswith("failed: RuntimeError: 4 of 4 rows (100.0%) are engine errors"), state
    assert load_results(out, model="tiny-llm")["engine_error"].null_count() == 0


def test_temperature_reaches_each_models_run_record(ray_local, tmp_path: Path) -> None:
    out = tmp_path / "results"
    assert _sweep(out, "--only", "oracle", "--temperature", "0.6") == 0
    root = out / "noregeo" / "model=oracle"
    record = json.loads(next((root / "runs").glob("*.json")).read_text())
    assert record["sampling"]["temperature"] == 0.6
    assert json.loads((root / "settings.json").read_text())["sampling"]["temperature"] == 0.6
