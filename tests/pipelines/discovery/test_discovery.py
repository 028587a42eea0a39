"""Discovery commands: list-tasks, list-models, show-item and --version, as a user runs them."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from PIL import Image

from geometry.items import build_items
from geometry.tasks.registry import all_tasks
from pipelines.cli import main
from pipelines.engines.models.config_yaml import CONFIG_DIR


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_list_tasks_lists_every_task_with_its_own_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = _json(capsys, "list-tasks", "--format", "json")
    assert isinstance(rows, list)
    assert [r["id"] for r in rows] == list(all_tasks())
    for row in rows:
        task = all_tasks()[row["id"]]
        assert (row["category"], row["answer_type"]) == (task.category, task.answer_type)
        assert row["options"] == list(task.options)
        for option in task.options:  # a choice task's prompt offers its options
            assert option in row["example_prompt"]


def test_list_tasks_as_csv_and_table_hold_the_same_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list-tasks", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["id"] for r in rows] == list(all_tasks())
    assert main(["list-tasks"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["id", "name", "category"]
    assert [line.split()[0] for line in table[2:]] == list(all_tasks())


def test_list_models_reads_every_config(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(capsys, "list-models", "--format", "json")
    assert isinstance(rows, list)
    files = sorted(CONFIG_DIR.rglob("*.yaml"))
    assert sorted(r["name"] for r in rows) == sorted(p.stem for p in files)
    for path in files:
        config = yaml.safe_load(path.read_text())
        row = next(r for r in rows if r["name"] == path.stem)
        assert row["engine"] == config.get("engine", "vllm")
        assert row["blocked"] == (config.get("blocked") or "")


def test_list_models_refuses_a_folder_without_configs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list-models", "--configs", str(tmp_path)]) == 2
    assert str(tmp_path) in capsys.readouterr().err


def test_show_item_generated_matches_generate_and_writes_its_images(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    item_id = "C-BCT-CT-0003"
    shown = _json(
        capsys, "show-item", item_id, "--per-task", "6", "--out", str(tmp_path), "--format", "json"
    )
    assert isinstance(shown, dict)
    expected = {r.setup: r for r in build_items("C-BCT-CT", 6, seed=0) if r.item_id == item_id}
    assert shown["answer"] == expected["text"].answer
    assert shown["prompts"] == {setup: row.prompt for setup, row in expected.items()}
    assert json.dumps(shown["geometry"], sort_keys=True) == json.dumps(
        json.loads(expected["text"].geometry), sort_keys=True
    )
    assert sorted(shown["images"]) == ["dotted", "full"]
    for path in shown["images"].values():
        with Image.open(path) as image:
            assert image.size == (448, 448)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["show-item", "C-BCT-CT-3"], "C-BCT-CT-3"),
        (["show-item", "X-NOPE-0001"], "X-NOPE-0001"),
        (["show-item", "C-BCT-CT-0100"], "--per-task 100"),
    ],
)
def test_show_item_names_a_bad_id_in_one_line(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path / "images")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err
    assert not (tmp_path / "images").exists()


def test_version_names_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("geosee ")


def test_show_item_from_an_item_table_is_what_generate_wrote(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(small_items / "part-N-BCT-MT.parquet").to_pylist()
    rows = {r["setup"]: r for r in table if r["item_id"] == "N-BCT-MT-0007"}
    argv = ["show-item", "N-BCT-MT-0007", "--items", str(small_items), "--out", str(tmp_path)]
    shown = _json(capsys, *argv, "--format", "json")
    assert isinstance(shown, dict)
    assert shown["answer"] == rows["text"]["answer"]
    assert shown["prompts"] == {setup: row["prompt"] for setup, row in rows.items()}
    for setup, path in shown["images"].items():
        assert Path(path).read_bytes() == rows[setup]["image"]
    # Generated again with the table's own per-task and seed, the item is the same.
    again = _json(capsys, "show-item", "N-BCT-MT-0007", "--per-task", "20", "--format", "json",
                  "--out", str(tmp_path / "again"))  # fmt: skip
    assert isinstance(again, dict)
    assert (again["answer"], again["prompts"]) == (shown["answer"], shown["prompts"])


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    import subprocess
    import sys

    # `geosee list-tasks | head -1`: here the reader is gone before anything is written.
    command = [sys.executable, "-m", "pipelines", "list-tasks", "--format", "json"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read().decode()
    assert proc.returncode == 1 and "Traceback" not in err, err
