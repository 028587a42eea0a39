"""A results folder's settings have two sources, settings.json and the run records under
runs/ (issue 26, item 2): losing or spoiling one never lets a run with other settings join
the folder's rows, and a spoiled file is one line and exit 2, not a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipelines.cli import main
from store.settings import SETTINGS_FILE

TASKS = "C-BCT-CT,N-ECL-SLT"


def _evaluate(items: Path, out: Path, *extra: str) -> int:
    args = ["evaluate", "--items", str(items), "--engine", "oracle", "--model", "oracle"]
    run = ["--tasks", TASKS, "--per-task", "2", "--setups", "text"]
    return main([*args, "--out", str(out), *run, *extra])


@pytest.fixture(scope="module")
def finished(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding `items` (the session's item table) and `results`, one finished
    oracle run (2 tasks x 2 items, text)."""
    base = tmp_path_factory.mktemp("settings_sources")
    (base / "items").symlink_to(small_items)
    assert _evaluate(base / "items", base / "results") == 0
    return base


def _copy(finished: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """items, a private copy of the results, and its model folder."""
    out = tmp_path / "results"
    shutil.copytree(finished / "results", out)
    return finished / "items", out, out / "noregeo" / "model=oracle"


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_other_sampling_after_settings_json_was_deleted_is_refused_by_the_run_records(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items, out, root = _copy(finished, tmp_path)
    (root / SETTINGS_FILE).unlink()
    shards = sorted(p.name for p in root.rglob("part-*.parquet"))
    capsys.readouterr()
    assert _evaluate(items, out, "--temperature", "0.6") == 2
    line = _one_error_line(capsys)
    assert "temperature" in line and "runs" in line, line
    assert not (root / SETTINGS_FILE).exists()  # a refused run rebuilds nothing
    assert sorted(p.name for p in root.rglob("part-*.parquet")) == shards


def test_a_deleted_settings_json_is_rebuilt_from_the_run_records_and_said_so(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items, out, root = _copy(finished, tmp_path)
    before = json.loads((root / SETTINGS_FILE).read_text())
    (root / SETTINGS_FILE).unlink()
    capsys.readouterr()
    assert _evaluate(items, out) == 0  # the same settings: nothing to do, no Ray
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "rebuilt from" in line], err
    assert json.loads((root / SETTINGS_FILE).read_text()) == before


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[1, 2]", b"\xff\xfe", b""],
    ids=["garbage", "list", "bytes", "empty"],
)
def test_an_unreadable_settings_json_is_one_line_and_exit_2(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    items, out, root = _copy(finished, tmp_path)
    (root / SETTINGS_FILE).write_bytes(content)
    capsys.readouterr()
    assert _evaluate(items, out) == 2
    line = _one_error_line(capsys)
    assert SETTINGS_FILE in line and "runs" in line, line
    assert (root / SETTINGS_FILE).read_bytes() == content  # never silently replaced


def test_a_settings_json_edited_to_other_sampling_is_refused_by_the_run_records(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items, out, root = _copy(finished, tmp_path)
    edited = json.loads((root / SETTINGS_FILE).read_text())
    edited["sampling"]["max_tokens"] = 64
    (root / SETTINGS_FILE).write_text(json.dumps(edited))
    capsys.readouterr()
    assert _evaluate(items, out, "--max-tokens", "64") == 2
    line = _one_error_line(capsys)
    assert "max_tokens" in line and "runs" in line, line


def test_rows_with_neither_settings_nor_run_records_are_refused(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items, out, root = _copy(finished, tmp_path)
    (root / SETTINGS_FILE).unlink()
    shutil.rmtree(root / "runs")
    capsys.readouterr()
    assert _evaluate(items, out, "--temperature", "0.6") == 2
    line = _one_error_line(capsys)
    assert "neither" in line and str(root) in line, line
