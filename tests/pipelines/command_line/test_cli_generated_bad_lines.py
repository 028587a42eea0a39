"""Issue 38: bad command lines generated from the argument parsers themselves, so a new
option (or a new rule of pipelines.command_line.conflicts) is covered without editing this file
(test_cli_bad_input.py holds the hand-written table of what needs a command's own checks).

For every command and every option that takes a value: each value of BAD_VALUES that the
option's own validator (its `type`, or its `choices`) refuses, and the option with no value
at all, must give exit 2, one line naming the option, nothing written, and no Ray. The
lines run in-process through `pipelines.cli.main`: argparse refuses a value as it reads it,
before any required argument is missed, so no other argument is needed.

For every rule of `pipelines.command_line.conflicts.CONFLICTS` and every command it covers: one
line that breaks it (both options of an `excludes` rule, the first alone of a `needs`
rule), the command's required arguments given values its parser takes, must give exit 2
and one line naming both options, nothing written, and no Ray.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.command_line.conflicts import CONFLICTS, Conflict, Use

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


# Values an option's own validator may take, tried in this order: a folder, counts, a
# size in pixels, a share, a word. A choice option takes its default (a default given on
# the command line is still a choice a rule reads).
GOOD_VALUES = ("{dir}", "1", "512", "0.5", "word")


def _good_value(action: argparse.Action, paths: dict[str, str]) -> str:
    if action.choices is not None:
        choices = list(action.choices)
        return str(action.default if action.default in choices else choices[0])
    for candidate in GOOD_VALUES:
        value = candidate.format(**paths)
        if not _refuses(action, value):
            return value
    raise AssertionError(f"no value of {GOOD_VALUES} suits {action.option_strings}")


def _holding(action: argparse.Action, use: Use, paths: dict[str, str]) -> list[str]:
    """The argument that makes `use` hold: its option with the rule's value, or given."""
    if isinstance(action, argparse.BooleanOptionalAction):
        wanted = use.values[0] if use.values else True
        return [action.option_strings[0 if wanted else 1]]
    if action.nargs == 0:
        assert use.values in ((), (True,)), use  # a store_true flag holds only when given
        return [use.flag]
    value = str(use.values[0]) if use.values else _good_value(action, paths)
    return [f"{use.flag}={value}"]


def _conflict_line(
    command: str, rule: Conflict, paths: dict[str, str]
) -> tuple[list[str], list[str]]:
    """A command line breaking `rule`, and the two options its refusal must name."""
    _module, parser = cli.command_parser(command)
    actions = parser._option_string_actions
    first, second = actions[rule.first.flag], actions[rule.second.flag]
    line = [command]
    for action in parser._actions:
        if action.required and action.dest not in (first.dest, second.dest):
            value = _good_value(action, paths)
            line += [f"{action.option_strings[-1]}={value}"] if action.option_strings else [value]
    line += _holding(first, rule.first, paths)
    if rule.kind == "excludes":
        line += _holding(second, rule.second, paths)
        named = [line[-2].split("=")[0], line[-1].split("=")[0]]
    else:
        # The second is left out, which must leave it unmet: by default it does not hold.
        values = rule.second.values
        assert second.default not in values if values else not second.required, rule
        named = [line[-1].split("=")[0], rule.second.flag]
    return line, named


CONFLICT_LINES = [(command, rule) for rule in CONFLICTS for command in rule.commands]


@pytest.mark.parametrize(
    ("command", "rule"),
    CONFLICT_LINES,
    ids=[f"{c}:{r.first.flag}-{r.kind}-{r.second.flag}" for c, r in CONFLICT_LINES],
)
def test_every_declared_conflict_is_one_line_naming_both_and_exit_2(
    command: str,
    rule: Conflict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_ray: None,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("text\n")
    (tmp_path / "folder").mkdir()
    paths = {"file": str(tmp_path / "file.txt"), "dir": str(tmp_path / "folder")}
    argv, named = _conflict_line(command, rule, paths)
    before = _tree(tmp_path)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert len(err.splitlines()) == 1 and err.startswith("error: "), (argv, err)
    assert all(flag in err for flag in named), (argv, named, err)
    assert _tree(tmp_path) == before, "a conflicting command line wrote something"


def test_each_rule_names_options_its_commands_have() -> None:
    for rule in CONFLICTS:
        for command in rule.commands:
            _module, parser = cli.command_parser(command)
            for use in (rule.first, rule.second):
                assert use.flag in parser._option_string_actions, (command, use)
    print(f"{len(CONFLICT_LINES)} generated conflicting command lines")
