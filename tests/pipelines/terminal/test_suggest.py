"""Did-you-mean: a mistyped task id, setup, engine, command or model config gets the closest
valid names in its one error line; a name close to nothing gets no guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.terminal.suggest import did_you_mean
from tests.conftest import REPO


def test_closest_names_case_ignored_and_nothing_for_a_far_word() -> None:
    assert did_you_mean("c-bct-cx", ["C-BCT-CT", "U-SYM-ST"]) == " (did you mean C-BCT-CT?)"
    assert did_you_mean("zzzz", ["C-BCT-CT", "U-SYM-ST"]) == ""


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["--tasks", "C-BCT-CX"], "unknown task IDs C-BCT-CX (did you mean C-BCT-CT"),
        (["--setups", "dottd"], "unknown setups dottd (did you mean dotted?)"),
        (["--engine", "vlm"], "invalid choice: 'vlm' (did you mean vllm?)"),
        (
            ["--engine", "hf", "--model", "qwen2.5-vl-7b-instrct"],
            "unknown model config 'qwen2.5-vl-7b-instrct' (did you mean qwen2.5-vl-7b-instruct",
        ),
    ],
)
def test_evaluate_suggests_in_its_one_line(
    argv: list[str],
    hint: str,
    small_items: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["evaluate", "--items", str(small_items), "--engine", "oracle", "--model", "oracle"]
    out = tmp_path / "out"
    assert main([*base, *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert hint in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_mistyped_command_is_suggested(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sumarize", "x"]) == 2
    assert "invalid choice: 'sumarize' (did you mean summarize" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["generate", "--tasks", "C-BCT-CX"], "unknown task IDs C-BCT-CX (did you mean C-BCT-CT"),
        (["generate", "--setups", "ful"], "unknown setups ful (did you mean full?)"),
        (["show-item", "C-BCT-CX-0001"], "unknown task 'C-BCT-CX' (did you mean C-BCT-CT"),
        (
            ["geobuild", "--engine", "vlm", "--model", "m"],
            "unknown engine 'vlm' (did you mean vllm?)",
        ),
        (
            ["geobuild", "--engine", "hf", "--model", "qwen2.5-vl-7b-instrct"],
            "unknown model config 'qwen2.5-vl-7b-instrct' (did you mean qwen2.5-vl-7b-instruct",
        ),
        (
            ["sweep", "--models", str(REPO / "configs/models"), "--dry-run", "--only", "qwen3-8bb"],
            "unknown model names qwen3-8bb (did you mean qwen3-8b",
        ),
    ],
)
def test_other_commands_suggest_in_their_one_line(
    argv: list[str], hint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "no-problems.json"  # geobuild reads its data set before the engine
    dataset.write_text('{"problems": []}')
    extra = ["--dataset", str(dataset)] if argv[0] == "geobuild" else []
    out = tmp_path / "out"
    assert main([*argv, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert hint in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
