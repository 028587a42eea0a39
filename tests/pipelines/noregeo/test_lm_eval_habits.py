"""What lm-eval users type first (issue 39): underscore flags, `--output_path`, `--tasks` by
name or category, no `--engine` for a config that names one, sample logs with token counts
and seconds. Parsed in-process: no Ray, no engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from geometry.tasks.registry import all_tasks
from pipelines import cli
from pipelines.engines.models import local_builds
from pipelines.noregeo.sample_log import write_sample_logs
from pipelines.noregeo.task_selection import select_tasks
from pipelines.sweep import run as sweep_run
from store.errors import UsageError

IDS = list(all_tasks())


def _items(folder: Path, tasks: list[str]) -> Path:
    """An item folder whose manifest lists `tasks` (its shards are never read here)."""
    folder.mkdir()
    for task in tasks:
        (folder / f"part-{task}.parquet").write_bytes(b"not read")
    manifest = {"tasks": tasks, "setups": ["text"], "per_task": 1}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_underscore_flags_are_the_hyphenated_ones(tmp_path: Path) -> None:
    argv = ["evaluate", "--items", str(tmp_path), "--engine", "random", "--model", "random"]
    argv += ["--per_task", "3", "--log_samples", str(tmp_path / "s"), "--out", str(tmp_path)]
    _module, args = cli._parse([*argv, "--batch_size=4"])
    assert (args.per_task, args.log_samples, args.batch_size) == (3, tmp_path / "s", 4)


def test_lm_evals_output_path_is_answered_with_out_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", "--items", str(tmp_path), "--engine", "random", "--model", "random"]
    assert cli.main([*argv, "--output_path", str(tmp_path / "r")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "--output_path" in lines[0] and "use --out" in lines[0], lines
    assert not (tmp_path / "r").exists()


def test_an_unknown_flag_gets_the_closest_known_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["generate", "--out", "x", "--per-tasks", "2"]) == 2
    assert "did you mean --per-task" in capsys.readouterr().err


def test_tasks_take_ids_names_categories_and_all() -> None:
    assert select_tasks("collinearity", IDS) == ["C-BCT-CT"]
    assert select_tasks("C-BCT", IDS) == ["C-BCT-CT"]
    assert select_tasks("N-", IDS) == [t for t in IDS if t.startswith("N-")]
    assert select_tasks("N-SCP,midpoint", IDS) == [
        "N-SCP-ICCT", "N-SCP-ICRT", "N-SCP-OCCT", "N-SCP-TTT", "N-BCT-MT",
    ]  # fmt: skip
    assert select_tasks("all", IDS) == IDS
    for bad in ("C-B", "colinearity", "N-,N-BCT-MT", " , "):
        with pytest.raises(UsageError):
            select_tasks(bad, IDS)


def test_tasks_that_select_nothing_of_the_items_are_one_line_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items(tmp_path / "items", ["C-BCT-CT"])
    out = tmp_path / "out"
    argv = ["evaluate", "--items", str(items), "--engine", "random", "--model", "random"]
    assert cli.main([*argv, "--tasks", "U-", "--out", str(out)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "--tasks U- selects no task of" in lines[0], lines
    assert not out.exists()


def _sweep_plans(tasks: str, out: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The task ids a dry-run `sweep --tasks TASKS` plans for (no Ray, nothing written)."""
    planned: list[list[str]] = []
    real_plan = sweep_run.plan

    def recording_plan(*args: Any, **kwargs: Any) -> Any:
        planned.append(list(args[3]))  # plan(configs, manifest, files, tasks, ...)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(sweep_run, "plan", recording_plan)
    argv = ["sweep", "--out", str(out), "--only", "oracle", "--gpus", "0", "--dry-run"]
    assert cli.main([*argv, "--per-task", "1", "--tasks", tasks]) == 0
    (tasks_planned,) = planned
    return tasks_planned


def test_sweep_tasks_take_names_and_categories_as_evaluate_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recomputed from the registry's own fields, not from the id prefixes the selection
    reads: a name is one task, a category its kind and category."""
    registry = all_tasks().items()
    (midpoint,) = [t for t, task in registry if task.name == "midpoint"]
    n_bct = [
        t for t, task in registry
        if task.kind == "numeric" and task.category == "Basic coordinate tasks"
    ]  # fmt: skip
    assert _sweep_plans("midpoint", tmp_path / "a", monkeypatch) == [midpoint]
    assert _sweep_plans("N-BCT", tmp_path / "b", monkeypatch) == n_bct
    assert _sweep_plans("collinearity,N-BCT", tmp_path / "c", monkeypatch) == [
        "C-BCT-CT", *n_bct,
    ]  # fmt: skip
    assert not any((tmp_path / d).exists() for d in "abc")


@pytest.mark.parametrize(
    ("tasks", "says"),
    [
        ("colinearity", "did you mean collinearity"),  # names are suggested, not only ids
        ("U-PAP-PT", "--tasks U-PAP-PT selects no task of"),  # a task the items lack
    ],
)
def test_sweep_tasks_that_select_nothing_are_one_line_before_ray_or_any_write(
    tasks: str,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_ray(_out: object) -> None:
        raise AssertionError("Ray started before --tasks was checked")

    monkeypatch.setattr(sweep_run, "_start_ray", no_ray)
    items = _items(tmp_path / "items", ["C-BCT-CT"])
    out = tmp_path / "out"
    argv = ["sweep", "--out", str(out), "--items", str(items), "--only", "oracle"]
    assert cli.main([*argv, "--gpus", "0", "--per-task", "1", "--tasks", tasks]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert not out.exists()


def test_the_engine_comes_from_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --engine: a config's engine (hf for smollm2, whose missing build is then the one
    line), and for a name that is no config, one line saying --engine is required."""
    monkeypatch.setattr(local_builds, "MODELS_DIR", tmp_path / "models")
    monkeypatch.delenv("GEOSEE_REAL_MODEL", raising=False)
    items = _items(tmp_path / "items", ["C-BCT-CT"])
    out = tmp_path / "out"
    for model, says in [("smollm2-135m-instruct", "make real-model"), ("o", "--engine is req")]:
        assert (
            cli.main(["evaluate", "--items", str(items), "--model", model, "--out", str(out)]) == 2
        )
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and says in lines[0], lines
    assert not out.exists()


def test_sample_lines_carry_tokens_and_seconds(tmp_path: Path) -> None:
    row: dict[str, object] = {"request_key": "k", "task": "C-BCT-CT", "item_id": "C-BCT-CT-0000"}
    row["setup"] = "text"
    row |= {"valid": True, "correct": False, "engine_error": None}
    row |= {"num_input_tokens": 212, "num_generated_tokens": 9, "time_taken_llm": 0.75}
    (path,) = write_sample_logs(pl.DataFrame([row]), "m", tmp_path)
    line = json.loads(path.read_text())
    assert (line["num_input_tokens"], line["num_generated_tokens"]) == (212, 9)
    assert line["time_taken_llm"] == 0.75 and line["verdict"] == "wrong"


def test_geobuild_takes_the_engine_from_the_config_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_builds, "MODELS_DIR", tmp_path / "models")
    monkeypatch.delenv("GEOSEE_REAL_MODEL", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    (data / "geoqa3_dataset_en.json").write_text('{"problems": []}')
    out = tmp_path / "out"
    for model, says in [("smollm2-135m-instruct", "make real-model"), ("m", "--engine is req")]:
        argv = ["geobuild", "--dataset", str(data), "--model", model, "--out", str(out)]
        assert cli.main(argv) == 2
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and says in lines[0], lines
    assert not out.exists()
