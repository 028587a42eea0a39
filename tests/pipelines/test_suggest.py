"""Did-you-mean: a mistyped task id, setup, engine, command or model config gets the closest
valid names in its one error line; a name close to nothing gets no guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.suggest import did_you_mean


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
