"""`evaluate` end to end with the baseline engines, bad input, and resume after SIGKILL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipelines.cli import main
from pipelines.noregeo.summarize import accuracy_table, load_results
from tests.conftest import REPO
from tests.pipelines.processes import interrupt_evaluate_after, kill_evaluate_after
from tests.pipelines.raw_shards import raw_duplicates

YES_NO_TASKS = [
    "C-BCT-CT",
    "C-SYM-SST",
    "U-CPR-CDT",
    "U-PAP-PLT",
    "U-PAP-PT",
    "U-PAP-RAT",
    "U-SCP-STT",
    "U-SYM-ST",
]
# 8 tasks x 20 items x 3 setups = 480 answers: chance 0.5 has a standard error of 0.023, so
# +-0.1 is over four of them.
CHANCE_MARGIN = 0.1


def _evaluate(items: Path, out: Path, engine: str, *extra: str) -> pl.DataFrame:
    code = main(
        [
            "evaluate",
            "--items",
            str(items),
            "--engine",
            engine,
            "--model",
            engine,
            "--out",
            str(out),
            *extra,
        ]
    )
    assert code == 0
    return load_results(out, model=engine)


@pytest.fixture(scope="module")
def oracle_results(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    return _evaluate(small_items, tmp_path_factory.mktemp("oracle"), "oracle")


def test_oracle_is_right_on_every_task_and_setup(oracle_results: pl.DataFrame) -> None:
    df = oracle_results
    assert df.height == 25 * 20 * 3
    per = df.group_by(["task", "setup"]).agg(pl.col("correct").mean().alias("acc"))
    assert per.height == 25 * 3
    assert per["acc"].min() == 1.0
    assert df["valid"].all()
    assert df["request_key"].n_unique() == df.height


def test_results_carry_the_documented_columns(oracle_results: pl.DataFrame) -> None:
    for column in (
        "item_id",
        "task",
        "setup",
        "model",
        "revision",
        "engine",
        "sampling_params",
        "generated_text",
        "parsed",
        "valid",
        "correct",
        "abs_error",
        "sq_error",
        "num_input_tokens",
        "time_taken_llm",
        "request_key",
        "pair_id",
        "geometry",
    ):
        assert column in oracle_results.columns, column
    assert "image" not in oracle_results.columns
    params = json.loads(oracle_results["sampling_params"][0])
    assert params["structured_outputs"]["grammar"].startswith("root ::=")


def test_random_is_near_chance_on_yes_no_tasks(small_items: Path, tmp_path: Path) -> None:
    df = _evaluate(small_items, tmp_path, "random", "--tasks", ",".join(YES_NO_TASKS))
    assert df.height == len(YES_NO_TASKS) * 20 * 3
    assert abs(df["correct"].mean() - 0.5) <= CHANCE_MARGIN
    assert df["valid"].all()


def test_constant_scores_the_share_of_its_answer(small_items: Path, tmp_path: Path) -> None:
    df = _evaluate(small_items, tmp_path, "constant", "--setups", "text")
    for task, rows in df.group_by("task"):
        answers = [json.loads(a) for a in rows["answer"]]
        options = rows["options"][0].to_list()
        if rows["answer_type"][0] == "choice":
            expected = sum(a["answer"] == options[0] for a in answers) / len(answers)
        elif rows["answer_type"][0] == "number":
            expected = sum(abs(a["answer"]) <= 0.5 for a in answers) / len(answers)
        else:
            expected = sum(abs(a["x"]) <= 0.5 and abs(a["y"]) <= 0.5 for a in answers) / len(
                answers
            )
        assert rows["correct"].mean() == pytest.approx(expected), task


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--items", "{missing}", "--engine", "oracle", "--model", "o"], "not a directory"),
        (["--items", "{items}", "--engine", "nope", "--model", "o"], "invalid choice: 'nope'"),
        (
            ["--items", "{items}", "--engine", "hf", "--model", "no-such-model"],
            "unknown model config",
        ),
        (
            [
                "--items",
                "{items}",
                "--engine",
                "hf",
                "--model",
                "{textcfg}",
                "--setups",
                "text,dotted",
            ],
            "text-only",
        ),
        (
            ["--items", "{items}", "--engine", "oracle", "--model", "o", "--tasks", "X-1"],
            "unknown task IDs X-1",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    small_items: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    textcfg = tmp_path / "text-model.yaml"
    textcfg.write_text(
        "name: text-model\nrepo: /nowhere\nengine: hf\nmodality: text\nsetups: [text]\n"
    )
    fill = {
        "missing": str(tmp_path / "missing"),
        "items": str(small_items),
        "textcfg": str(textcfg),
    }
    out = tmp_path / "results"
    result = _run_cli("evaluate", *[a.format(**fill) for a in args], "--out", str(out))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists()


def _comparable(df: pl.DataFrame) -> pl.DataFrame:
    return df.drop("time_taken_llm").sort("request_key")


def test_killed_run_resumes_to_exactly_the_uninterrupted_rows(
    small_items: Path, tmp_path: Path
) -> None:
    args = [
        "--items",
        str(small_items),
        "--engine",
        "random",
        "--model",
        "random",
        "--per-task",
        "4",
        "--batch-size",
        "6",
        "--baseline-delay",
        "0.15",
        "--shard-rows",
        "12",
    ]
    killed = tmp_path / "killed"
    shards = killed / "noregeo" / "model=random"
    kill_evaluate_after([*args, "--out", str(killed)], shards)
    partial = load_results(killed, model="random")
    total = 25 * 4 * 3
    assert 0 < partial.height < total, "the run was not killed half-way"

    assert main(["evaluate", *args, "--baseline-delay", "0", "--out", str(killed)]) == 0
    resumed = load_results(killed, model="random")
    assert resumed["request_key"].n_unique() == resumed.height == total
    # Not one late shard of the killed run beside the resumed run's rows, in the raw shards
    # too, not only through the reader that keeps one row per key.
    assert raw_duplicates(shards) == 0

    fresh = tmp_path / "fresh"
    assert main(["evaluate", *args, "--baseline-delay", "0", "--out", str(fresh)]) == 0
    uninterrupted = load_results(fresh, model="random")
    assert _comparable(resumed).equals(_comparable(uninterrupted))
    by = ["model", "task", "setup"]
    assert accuracy_table(resumed, by).equals(accuracy_table(uninterrupted, by))


def test_ctrl_c_prints_one_line_exits_130_and_the_same_command_resumes(
    small_items: Path, tmp_path: Path
) -> None:
    """SIGINT to the run's process group (a terminal's Ctrl-C): no traceback, one line that
    counts the rows on disk and says how to resume, exit 130; the rerun completes the rows."""
    args = ["--items", str(small_items), "--engine", "random", "--model", "random"]
    args += ["--per-task", "4", "--batch-size", "6", "--shard-rows", "12"]
    out = tmp_path / "interrupted"
    root = out / "noregeo" / "model=random"
    code, stderr = interrupt_evaluate_after(
        [*args, "--baseline-delay", "0.15", "--out", str(out)], root
    )
    assert code == 130, stderr
    assert "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    partial = load_results(out, model="random")
    total = 25 * 4 * 3
    assert 0 < partial.height < total, "the run was not interrupted half-way"
    assert last == (
        f"interrupted; {partial.height} rows saved in {root}; run the same command to resume"
    ), stderr

    assert main(["evaluate", *args, "--out", str(out)]) == 0
    resumed = load_results(out, model="random")
    assert resumed["request_key"].n_unique() == resumed.height == total
    assert raw_duplicates(root) == 0
