"""Renamed flags (issue 14): an old name exits 2 with one line saying what to use instead
(argparse alone says only "unrecognized arguments"), and writes nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.command_line.renames import MOVED_POSITIONALS, RENAMED, parse_command
from tests.conftest import REPO

# command, old flag, the argv (a whole call but for the old flag), the new names the line gives.
ROWS = [
    ("generate", "--seed", "generate --out {out} --seed 1", ["--item-seed"]),
    ("show-item", "--seed", "show-item C-BCT-CT-0001 --out {out} --seed 1", ["--item-seed"]),
    ("evaluate", "--seed", "evaluate {E} --seed 1", ["--sampling-seed"]),
    ("evaluate", "--limit", "evaluate {E} --limit 2", ["--per-task"]),
    ("geobuild", "--seed", "geobuild {G} --seed=1", ["--sampling-seed"]),
    ("geobuild", "--limit", "geobuild {G} --limit 2", ["--first"]),
    ("sweep", "--seed", "sweep {W} --seed 1", ["--item-seed", "--sampling-seed"]),
    ("tiny-model", "--seed", "tiny-model --kind llm --out {out} --seed 1", ["--weights-seed"]),
    (
        "human-export",
        "--seed",
        "human-export --items {dir} --out {out} --seed 1",
        ["--order-seed"],
    ),
    ("probe", "--limit", "probe --grid {file} --out {out} --limit 2", ["--max-trials"]),
    (
        "geobuild-solve",
        "--conflict-seconds",
        "geobuild-solve {S} --conflict-seconds 5",
        ["--conflict-steps"],
    ),
    ("geobuild-solve", "--solve-seconds", "geobuild-solve {S} --solve-seconds 5", ["--restarts"]),
]
REQUIRED = {
    "E": "--items {dir} --engine oracle --model o --out {out}",
    "G": "--dataset {dir} --engine hf --model m --out {out}",
    "S": "--dataset {dir} --out {out}",
    "W": "--models {models} --out {out} --dry-run",
}


def _argv(template: str, tmp: Path) -> list[str]:
    (tmp / "empty").mkdir(exist_ok=True)
    (tmp / "file.txt").write_text("some text\n")
    text = template.format(**REQUIRED, out="{out}", dir="{dir}", file="{file}")
    places = {
        "out": tmp / "out",
        "dir": tmp / "empty",
        "file": tmp / "file.txt",
        "models": REPO / "configs" / "models",
    }
    return text.format(**places).split()


@pytest.mark.parametrize(
    ("command", "old", "template", "new"), ROWS, ids=[f"{r[0]}{r[1]}" for r in ROWS]
)
def test_an_old_flag_says_what_to_use(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    old: str,
    template: str,
    new: list[str],
) -> None:
    code = cli.main(_argv(template, tmp_path))
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"error: {old} was renamed: use "), lines[0]
    assert all(name in lines[0] for name in new), lines[0]
    assert not (tmp_path / "out").exists()


def test_the_rows_cover_the_table_and_its_new_names_exist() -> None:
    assert {(r[0], r[1]) for r in ROWS} == {(c, f) for c, old in RENAMED.items() for f in old}
    for command, old, _template, new in ROWS:
        _module, parser = cli.command_parser(command)
        assert all(name in parser._option_string_actions for name in new), command
        assert old not in parser._option_string_actions, f"{command} still takes {old}"


@pytest.mark.parametrize(
    ("command", "template"),
    [
        ("human-import", "human-import {file} --items {dir} --out {out}"),
        ("human-export", "human-export {dir} --out {out}"),
    ],
)
def test_an_input_given_as_a_position_names_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, template: str
) -> None:
    assert cli.main(_argv(template, tmp_path)) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert f"takes its input as {MOVED_POSITIONALS[command]}" in line, line
    assert "no longer positional" in line, line
    assert not (tmp_path / "out").exists()


def test_other_human_import_errors_stay_argparse_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --annotations given, a bad --items is reported as itself, not as the move."""
    argv = _argv("human-import --annotations {file} --items {file} --out {out}", tmp_path)
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "--items" in line and "positional" not in line, line


def test_a_live_option_is_never_shadowed_by_the_table() -> None:
    """A command that (still) has an option of an old name parses it as usual."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int)
    assert parse_command("generate", parser, ["--seed", "4"]).seed == 4


def test_values_after_a_double_dash_are_not_flags() -> None:
    parser = cli.OneLineParser()
    parser.add_argument("words", nargs="*")
    assert parse_command("generate", parser, ["--", "--seed"]).words == ["--seed"]
