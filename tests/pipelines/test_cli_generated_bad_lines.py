"""Issue 38: bad command lines generated from the argument parsers themselves, so a new
option is covered without editing this file (test_cli_bad_input.py holds the hand-written
table of what needs a command's own checks).

For every command and every option that takes a value: each value of BAD_VALUES that the
option's own validator (its `type`, or its `choices`) refuses, and the option with no value
at all, must give exit 2, one line naming the option, nothing written, and no Ray. The
lines run in-process through `pipelines.cli.main`: argparse refuses a value as it reads it,
before any required argument is missed, so no other argument is needed.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines import cli

# Each class of bad value: empty, blank, a word for a number, signs, zero, NaN and the
# infinities, past every range, a float for a count, a path that is missing, a file where
# a folder goes and a folder where a file goes, control characters, a storage URI of an
# unknown scheme. `{file}` and `{dir}` are made under the test's folder.
BAD_VALUES = (
    "", " ", "nope", "-1", "0", "-0.5", "2.5", "nan", "inf", "-inf", "1e999", "9" * 40,
    "{dir}/missing/x", "{file}", "{dir}", "a\tb", "ftp://bucket/x",
)  # fmt: skip


def _options() -> Iterator[tuple[str, argparse.Action]]:
    """Every (command, option) pair that takes a value, from the parsers."""
    for name in cli.COMMANDS:
        _module, parser = cli.command_parser(name)
        for action in parser._actions:
            takes_value = action.nargs != 0 and action.option_strings
            if takes_value and action.option_strings[0] != "--help":
                yield name, action


OPTIONS = list(_options())


def _refuses(action: argparse.Action, value: str) -> bool:
    """Whether the option's own validator refuses `value` (what argparse asks of it)."""
    if action.type is not None and callable(action.type):
        try:
            converted = action.type(value)
        except (argparse.ArgumentTypeError, TypeError, ValueError):
            return True
    else:
        converted = value
    return action.choices is not None and converted not in action.choices


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Ray was started for a bad command line")

    monkeypatch.setattr(ray, "init", refuse)


def _tree(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*")}


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_refused_value_of_every_option_is_one_line_and_exit_2(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_ray: None,
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative path written by mistake lands here
    (tmp_path / "file.txt").write_text("text\n")
    (tmp_path / "folder").mkdir()
    paths = {"file": str(tmp_path / "file.txt"), "dir": str(tmp_path / "folder")}
    values = [v.format(**paths) for v in BAD_VALUES]
    before = _tree(tmp_path)
    tried = 0
    for name, action in OPTIONS:
        if name != command:
            continue
        flag = action.option_strings[-1]
        # The option with no value at all, unless its value is optional (nargs="?").
        lines = [] if action.nargs == argparse.OPTIONAL else [[name, flag]]
        lines += [[name, f"{flag}={value}"] for value in values if _refuses(action, value)]
        for argv in lines:
            tried += 1
            code = cli.main(argv)
            err = capsys.readouterr().err
            assert code == 2, (argv, err)
            assert len(err.splitlines()) == 1 and err.startswith("error: "), (argv, err)
            assert flag in err, (argv, err)
    assert tried > 0 or not any(n == command for n, _ in OPTIONS)
    assert _tree(tmp_path) == before, "a bad command line wrote something"


def test_the_generated_lines_cover_every_command_and_are_counted() -> None:
    commands = {name for name, _ in OPTIONS}
    assert commands == set(cli.COMMANDS)
    paths = {"file": "/nonexistent/file.txt", "dir": "/nonexistent"}
    refused = sum(
        (action.nargs != argparse.OPTIONAL)
        + sum(_refuses(action, v.format(**paths)) for v in BAD_VALUES)
        for _, action in OPTIONS
    )
    print(f"{refused} generated bad command lines over {len(OPTIONS)} options")
    # A floor, so that a parser change that stops refusing whole classes shows up here.
    assert refused >= 400, refused
