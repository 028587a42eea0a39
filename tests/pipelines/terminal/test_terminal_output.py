"""What `summarize` prints and what `evaluate` writes to results.json, read back as a
researcher or a program would: every task, percentages, a fixed order, and json, csv and
results.json numbers recomputed here from the rows themselves."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from geometry.item import SETUPS
from geometry.tasks.registry import all_tasks
from pipelines import cli
from pipelines.terminal.output import table_text
from store.results_file import RESULTS_JSON

MODELS = ("b-model", "a-model")  # written out of order: the tables sort them
ITEMS_PER_CELL = 4


def _rows() -> pl.DataFrame:
    """Every task x setup x model, 4 items each; seeded right/invalid/engine-error draws."""
    rng = np.random.default_rng(7)
    rows = []
    for model in MODELS:
        for setup in reversed(SETUPS):  # shards in another order than the tables' one
            for task_id, task in all_tasks().items():
                for item in range(ITEMS_PER_CELL):
                    failed = rng.random() < 0.1
                    valid = not failed and rng.random() < 0.8
                    rows.append(
                        {
                            "request_key": f"{model}/{task_id}/{setup}/{item}",
                            "model": model,
                            "task": task_id,
                            "category": task.category,
                            "setup": setup,
                            "answer_type": task.answer_type,
                            "pair_id": None,
                            "valid": valid,
                            "correct": valid and bool(rng.random() < 0.5),
                            "sq_error": None,
                            "engine_error": "final: HTTP 400" if failed else None,
                        }
                    )
    return pl.DataFrame(rows)


@pytest.fixture
def results(tmp_path: Path) -> tuple[Path, pl.DataFrame]:
    rows = _rows()
    for (model, setup), part in rows.group_by(["model", "setup"]):
        folder = tmp_path / "noregeo" / f"model={model}" / f"setup={setup}"
        folder.mkdir(parents=True)
        part.write_parquet(folder / "part-0.parquet")
    return tmp_path, rows


def _expected_percent(rows: pl.DataFrame, column: str) -> float:
    """Percent of the answered rows (no engine error) where `column` holds, one decimal."""
    answered = rows.filter(pl.col("engine_error").is_null())
    return round(100 * answered[column].mean(), 1)


def _every_item_percent(rows: pl.DataFrame) -> float:
    """Percent of every row that is right, an engine error counted wrong (the paper's)."""
    right = rows.filter(pl.col("engine_error").is_null())["correct"].sum()
    return round(100 * right / rows.height, 1)


def _summarize(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(["summarize", *argv]) == 0
    return capsys.readouterr().out


def test_table_lists_every_task_in_order_with_percent_columns(
    results: tuple[Path, pl.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    out, rows = results
    text = _summarize(capsys, str(out))
    assert "…" not in text
    tasks = list(all_tasks())
    assert len(tasks) == 25
    for model in sorted(MODELS):  # each model's block lists every task in order
        block = text[text.index(f" {model} ") :]
        positions = [block.index(f" {task} ") for task in tasks]
        assert positions == sorted(positions)
    assert text.index(" a-model ") < text.index(" b-model ")
    header = next(line for line in text.splitlines() if line.startswith("│ model "))
    positions = [header.index(f" {setup} % ") for setup in SETUPS]
    assert positions == sorted(positions)
    assert "## by_task" not in text  # the headline only; --all prints the rest
    assert "## by_task" in _summarize(capsys, str(out), "--all")


def test_json_holds_percentages_recomputed_from_the_rows_in_a_stable_order(
    results: tuple[Path, pl.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    out, rows = results
    tables = json.loads(_summarize(capsys, str(out), "--format", "json", "--all"))
    overall = tables["overall"]
    assert [(r["model"], r["setup"]) for r in overall] == [
        (m, s) for m in sorted(MODELS) for s in SETUPS
    ]
    for row in overall:
        cell = rows.filter((pl.col("model") == row["model"]) & (pl.col("setup") == row["setup"]))
        assert row["n"] == cell.height
        assert row["accuracy %"] == pytest.approx(_every_item_percent(cell))
        answered = _expected_percent(cell, "correct")
        assert row["answered-only accuracy %"] == pytest.approx(answered)
        assert row["unanswered"] == cell["engine_error"].is_not_null().sum()
        invalid = cell.with_columns(invalid=~pl.col("valid"))
        assert row["invalid %"] == pytest.approx(_expected_percent(invalid, "invalid"))
        errors = cell["engine_error"].is_not_null().mean()
        assert row["engine error %"] == pytest.approx(round(100 * errors, 1))
        assert row["ci95 low %"] <= row["accuracy %"] <= row["ci95 high %"]
    wide = tables["accuracy_by_task"]
    assert [(r["model"], r["task"]) for r in wide] == [
        (m, t) for m in sorted(MODELS) for t in all_tasks()
    ]
    for row in wide:
        same = (pl.col("model") == row["model"]) & (pl.col("task") == row["task"])
        for setup in SETUPS:
            cell = rows.filter(same & (pl.col("setup") == setup))
            assert row[f"{setup} %"] == pytest.approx(_every_item_percent(cell))
    by_task = [(r["model"], r["task"], r["setup"]) for r in tables["by_task"]]
    assert by_task == [(m, t, s) for m in sorted(MODELS) for t in all_tasks() for s in SETUPS]


def test_csv_files_parse_back_to_the_json_numbers(
    results: tuple[Path, pl.DataFrame], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--csv-dir: one CSV file per table, each loadable by a plain CSV reader."""
    out, _ = results
    from_json = json.loads(_summarize(capsys, str(out), "--format", "json", "--all"))
    folder = tmp_path / "csv"
    listed = _summarize(capsys, str(out), "--format", "csv", "--all", "--csv-dir", str(folder))
    assert listed.splitlines() == [str(folder / f"{name}.csv") for name in from_json]
    for name, want_rows in from_json.items():
        parsed = list(csv.DictReader((folder / f"{name}.csv").read_text().splitlines()))
        assert len(parsed) == len(want_rows)
        for got, want in zip(parsed, want_rows, strict=True):
            assert list(got) == list(want)
            for column, value in want.items():
                if isinstance(value, bool) or value is None:
                    continue
                if isinstance(value, int | float):
                    assert float(got[column]) == pytest.approx(value)
                else:
                    assert got[column] == value


def test_csv_on_stdout_is_one_plain_table(
    results: tuple[Path, pl.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = results
    from_json = json.loads(_summarize(capsys, str(out), "--format", "json", "--tables", "mse"))
    text = _summarize(capsys, str(out), "--format", "csv", "--tables", "mse")
    assert len(list(csv.DictReader(text.splitlines()))) == len(from_json["mse"])


def test_csv_of_several_tables_without_a_folder_is_refused(
    results: tuple[Path, pl.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = results
    assert cli.main(["summarize", str(out), "--format", "csv", "--all"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "pick one with --tables NAME, or write each to a file with --csv-dir DIR" in (
        captured.err
    )


def test_tables_flag_picks_tables_in_a_fixed_order(
    results: tuple[Path, pl.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = results
    picked = json.loads(_summarize(capsys, str(out), "--format", "json", "--tables", "mse,overall"))
    assert list(picked) == ["overall", "mse"]


def test_a_wide_table_is_printed_whole() -> None:
    wide = pl.DataFrame({f"column {i} %": [float(i), None] for i in range(40)})
    long = pl.DataFrame({"task": [f"task-{i}" for i in range(300)]})
    text = table_text({"wide": wide, "long": long}, "table")
    assert "…" not in text
    assert all(f"column {i} %" in text for i in range(40))
    assert all(f"task-{i} " in text for i in range(300))


def test_a_wide_table_is_folded_into_blocks_that_fit_100_columns_keys_repeated() -> None:
    """Issue 39: the demo's tables were 244 characters wide. Every line fits 100 columns,
    every value is there once per block, and each block repeats the row's key columns."""
    models, tasks = ["model-a", "model-b"], ["C-BCT-CT", "U-PAP-PT"]
    wide = pl.DataFrame(
        {
            "model": [m for m in models for _ in tasks],
            "task": tasks * 2,
            **{f"setup {i} accuracy %": [10.5 * i + k for k in range(4)] for i in range(12)},
        }
    )
    text = table_text({"wide": wide}, "table")
    assert max(len(line) for line in text.splitlines()) <= 100
    blocks = text.split("(columns, part ")[1:]
    assert len(blocks) >= 2
    for block in blocks:
        assert all(name in block for name in [*models, *tasks])  # keys in every block
    for i in range(12):  # each value column in exactly one block, with its values
        holding = [b for b in blocks if f"setup {i} accuracy %" in b]
        assert len(holding) == 1
        assert all(f"{10.5 * i + k}" in holding[0] for k in range(4))


def _probe_rows(out: Path) -> None:
    """One encoder's trial rows, joint and separate probes on two tasks (fractions)."""
    rows = []
    tasks = ("C-BCT-CT", "U-PAP-PT")
    for regime, trained in (("joint", "All"), ("separate", tasks[0]), ("separate", tasks[1])):
        for config in ("FD", "UF"):
            for task in tasks:
                for setup in ("F", "D"):
                    accuracy = 0.81234 if trained in ("All", task) else 0.71875
                    rows.append(
                        {
                            "arch": "ViT-T",
                            "pretrained": "none",
                            "token_norm": "none",  # as probe runs write it (docs/probes.md)
                            "regime": regime,
                            "train_tasks": trained,
                            "config": config,
                            "eval_task": task,
                            "eval_setup": setup,
                            "accuracy": accuracy,
                        }
                    )
    folder = out / "probes" / "ViT-T"
    folder.mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(folder / "trial-0.parquet")


def test_probe_summarize_json_is_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(cli.COMMANDS, "probe-summarize", ("pipelines.probes.summarize", "t"))
    _probe_rows(tmp_path)
    assert cli.main(["probe-summarize", str(tmp_path), "--format", "json", "--all"]) == 0
    tables = json.loads(capsys.readouterr().out)
    assert list(tables) == ["table4:ViT-T/none", "table5:ViT-T/none", "transfer:ViT-T/none"]
    joint = tables["table4:ViT-T/none"][0]
    assert joint["C-BCT-CTF %"] == pytest.approx(81.2)
    transfer = tables["transfer:ViT-T/none"]
    assert sorted({r["Accuracy %"] for r in transfer}) == pytest.approx([71.9, 81.2])
    assert cli.main(["probe-summarize", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "## table4:ViT-T/none" in text and "## transfer" not in text


@pytest.mark.usefixtures("ray_local")
def test_evaluate_writes_results_json_recomputable_from_its_shards(tmp_path: Path) -> None:
    items, out = tmp_path / "items", tmp_path / "results"
    argv = ["--tasks", "C-BCT-CT,N-ECL-SLT", "--per-task", "6", "--image-size", "64"]
    assert cli.main(["generate", "--out", str(items), *argv]) == 0
    argv = ["--items", str(items), "--engine", "random", "--model", "random", "--out", str(out)]
    assert cli.main(["evaluate", *argv, "--per-task", "5"]) == 0
    folder = out / "noregeo" / "model=random"
    document = json.loads((folder / RESULTS_JSON).read_text())
    shards = pl.concat(
        [pl.read_parquet(p) for p in sorted(folder.glob("setup=*/*.parquet"))],
        how="diagonal_relaxed",
    )
    assert shards.height == 2 * 5 * len(SETUPS)
    assert list(document["results"]) == [
        f"{t}/{s}" for t in ("C-BCT-CT", "N-ECL-SLT") for s in SETUPS
    ]
    for cell, metrics in document["results"].items():
        task, setup = cell.split("/")
        rows = shards.filter((pl.col("task") == task) & (pl.col("setup") == setup))
        assert metrics["n"] == rows.height == 5 and metrics["missing"] == 0
        assert metrics["accuracy_pct"] == pytest.approx(100 * rows["correct"].mean(), abs=1e-3)
        assert metrics["invalid_pct"] == pytest.approx(100 * (~rows["valid"]).mean(), abs=1e-3)
        assert metrics["engine_error_pct"] == 0.0
        assert metrics["ci95_low_pct"] <= metrics["accuracy_pct"] <= metrics["ci95_high_pct"]
    for setup, metrics in document["overall"].items():
        rows = shards.filter(pl.col("setup") == setup)
        assert metrics["n"] == rows.height
        assert metrics["accuracy_pct"] == pytest.approx(100 * rows["correct"].mean(), abs=1e-3)
    manifest = json.loads((items / "manifest.json").read_text())
    provenance = document["provenance"]
    assert provenance["items"]["seed"] == manifest["seed"]
    assert provenance["items"]["counts"] == manifest["counts"]
    assert provenance["items"]["content_sha256"] == manifest["content_sha256"]
    assert (folder / "runs" / provenance["run_record"]).is_file()
    assert provenance["packages"]["polars"] == pl.__version__
    assert document["config"]["model"]["engine"] == "random"
    assert document["config"]["limit"] == 5
    assert document["config"]["sampling"]["temperature"] is not None
