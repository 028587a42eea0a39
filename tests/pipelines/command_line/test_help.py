"""`--help` of every command: each option documented, defaults shown, the command described."""

from __future__ import annotations

import argparse

import pytest

from pipelines.cli import COMMANDS, command_parser, main
from pipelines.command_line.args import VALID_RANGE


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_of_every_command_is_documented(name: str) -> None:
    _module, parser = command_parser(name)
    assert parser.description == COMMANDS[name][1]
    text = parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        label = action.option_strings[0] if action.option_strings else action.dest
        assert action.help and action.help.strip(), f"{name} {label} has no help"
        assert label in text or (action.metavar or "") in text
        has_value = not any(action.default is v for v in (None, False, argparse.SUPPRESS))
        if action.option_strings and has_value and "default" not in action.help:
            assert _help_of(text, label).count("(default: ") == 1, f"{name} {label}"


def _help_of(text: str, label: str) -> str:
    """The lines of `text` from the option's own line to the next option's."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(label + " "))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].strip().startswith("-")), len(lines)
    )
    return " ".join(lines[start:end])


def test_the_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "Does a model see elementary geometry?" in text
    for name in COMMANDS:
        assert name in text


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_numeric_option_has_a_range_its_help_shows(name: str) -> None:
    """A numeric option is one whose default is a number or whose validator has a range;
    each must have a validator with a range (pipelines.command_line.args), shown by --help."""
    _module, parser = command_parser(name)
    text = parser.format_help()
    for action in parser._actions:
        if not action.option_strings or action.choices is not None:
            continue
        label = action.option_strings[0]
        numeric_default = isinstance(action.default, int | float) and not isinstance(
            action.default, bool
        )
        valid = getattr(action.type, VALID_RANGE, None)
        assert action.type not in (int, float), f"{name} {label}: a bare {action.type}"
        if numeric_default or valid is not None:
            assert valid is not None, f"{name} {label} has no range"
            assert f"(range: {valid})" in " ".join(_help_of(text, label).split()), label
