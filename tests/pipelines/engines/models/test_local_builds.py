"""A local config whose folder a variable names (`repo_env`) works in a plain shell: without
the variable it is the checkout's `models/<name>`, as `make real-model` builds it; a folder
that is not there is one line naming the build command, exit 2, nothing written (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.engines.models import local_builds
from pipelines.engines.models.model_resolution import resolve_model

REAL = "smollm2-135m-instruct"


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty checkout `models/` folder, with none of the Makefile's variables set."""
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setattr(local_builds, "MODELS_DIR", folder)
    for name in ("GEOSEE_REAL_MODEL", "GEOSEE_TINY_LLM", "GEOSEE_TINY_VLM"):
        monkeypatch.delenv(name, raising=False)
    return folder


def test_the_real_model_is_found_in_the_checkout_without_the_variable(models_dir: Path) -> None:
    built = models_dir / REAL
    built.mkdir()
    (built / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert resolve_model("hf", REAL).repo == str(built)


def test_the_variable_still_wins(models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEOSEE_REAL_MODEL", "/elsewhere/smollm2")
    assert resolve_model("hf", REAL).repo == "/elsewhere/smollm2"


def test_a_missing_build_is_one_line_naming_its_command_and_nothing_is_written(
    models_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items"
    items.mkdir()
    (items / "part-C-BCT-CT.parquet").write_bytes(b"not read: the model is refused first")
    (items / "manifest.json").write_text(
        json.dumps({"tasks": ["C-BCT-CT"], "setups": ["text"], "per_task": 1})
    )
    out = tmp_path / "out"
    argv = ["evaluate", "--items", str(items), "--engine", "hf", "--model", REAL]
    code = cli.main([*argv, "--setups", "text", "--out", str(out)])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(lines) == 1 and "`make real-model`" in lines[0], lines
    assert str(models_dir / REAL) in lines[0] and "GEOSEE_REAL_MODEL" in lines[0]
    assert not out.exists()


def test_a_tiny_model_is_found_in_the_checkout_else_left_to_the_sweep(models_dir: Path) -> None:
    """The sweep builds a missing tiny model where it runs (pipelines/sweep/run.py)."""
    assert resolve_model("hf", "tiny-llm").repo == "tiny-llm"
    built = models_dir / "tiny-llm"
    built.mkdir()
    (built / "config.json").write_text("{}")
    assert resolve_model("hf", "tiny-llm").repo == str(built)
