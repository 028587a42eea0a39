"""Generator options end to end: `generate` records them in manifest.json, `evaluate` keeps
one item-set choice per results folder (a resume with items made otherwise is refused,
naming the option), and `--temperature` lands in the run record and the folder's settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from geometry.items import GENERATOR_VERSION
from geometry.tasks.options import DEFAULT_OPTIONS
from pipelines.cli import main
from store.settings import SETTINGS_FILE

TASKS = "N-GTR-RT,U-SCP-STT"


def _generate(out: Path, *extra: str) -> dict[str, Any]:
    args = ["generate", "--out", str(out), "--tasks", TASKS, "--per-task", "4"]
    assert main([*args, "--image-size", "96", "--setups", "text,full", *extra]) == 0
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return manifest


def _evaluate(items: Path, out: Path, *extra: str) -> int:
    args = ["evaluate", "--items", str(items), "--engine", "oracle", "--model", "oracle"]
    return main([*args, "--out", str(out), *extra])


@pytest.fixture(scope="module")
def paper_items(ray_local: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paper_items")
    _generate(out)
    return out


def test_manifest_records_every_option_and_the_cli_sets_them(
    paper_items: Path, tmp_path: Path
) -> None:
    paper = json.loads((paper_items / "manifest.json").read_text())
    assert paper["options"] == DEFAULT_OPTIONS.as_dict()
    assert set(paper["options"]) == {"variants", "semicircle_prompt", "semicircle_figure",
                                     "grid_step"}  # fmt: skip
    flags = ["--variants", "extended", "--semicircle-prompt", "diameter"]
    flags += ["--semicircle-figure", "triangle", "--grid-step", "1"]
    other = _generate(tmp_path / "other", *flags)
    assert other["options"] == {
        "variants": "extended",
        "semicircle_prompt": "diameter",
        "semicircle_figure": "triangle",
        "grid_step": 1.0,
    }
    assert other["content_sha256"] != paper["content_sha256"]
    rows = pq.read_table(tmp_path / "other" / "part-U-SCP-STT.parquet").to_pylist()
    assert all("with diameter AB" in r["prompt"] for r in rows)
    paper_rows = pq.read_table(paper_items / "part-U-SCP-STT.parquet").to_pylist()
    assert not any("diameter" in r["prompt"] for r in paper_rows)


def test_a_resume_with_items_made_otherwise_is_refused_naming_the_option(
    paper_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _evaluate(paper_items, out) == 0
    root = out / "noregeo" / "model=oracle"
    settings = json.loads((root / SETTINGS_FILE).read_text())
    assert settings["item_variants"] == "paper" and settings["item_grid_step"] == 0.5
    record = json.loads(next((root / "runs").glob("*.json")).read_text())
    assert record["items"]["item_semicircle_prompt"] == "paper"
    capsys.readouterr()
    assert _evaluate(paper_items, out) == 0  # the same items resume
    for flag, value, field in (
        ("--grid-step", "1", "item_grid_step"),
        ("--variants", "extended", "item_variants"),
        ("--semicircle-figure", "triangle", "item_semicircle_figure"),
    ):
        other = tmp_path / f"items-{field}"
        _generate(other, flag, value)
        capsys.readouterr()
        assert _evaluate(other, out) == 2
        line = capsys.readouterr().err.strip()
        assert len(line.splitlines()) == 1 and field in line, line
        assert "item_seed" not in line  # only what differs is named
    assert json.loads((root / SETTINGS_FILE).read_text()) == settings  # nothing rewritten


def test_a_folder_from_before_item_settings_takes_only_first_generation_items(
    paper_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _evaluate(paper_items, out) == 0
    path = out / "noregeo" / "model=oracle" / SETTINGS_FILE
    legacy = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("item_")}
    path.write_text(json.dumps(legacy))
    capsys.readouterr()
    assert _evaluate(paper_items, out) == 2
    line = capsys.readouterr().err.strip()
    assert "item_generator_version='noregeo-gen-1'" in line and GENERATOR_VERSION in line


def test_temperature_is_recorded_and_one_per_folder(
    paper_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    assert _evaluate(paper_items, out, "--temperature", "0.6") == 0
    root = out / "noregeo" / "model=oracle"
    record = json.loads(next((root / "runs").glob("*.json")).read_text())
    assert record["sampling"]["temperature"] == 0.6
    assert json.loads((root / SETTINGS_FILE).read_text())["sampling"]["temperature"] == 0.6
    capsys.readouterr()
    assert _evaluate(paper_items, out) == 2  # the default, 0, is another setting
    assert "temperature" in capsys.readouterr().err
