"""Options that cannot go together, declared once as a table (issue 38).

`pipelines.cli` refuses a command line that breaks a rule right after parsing it, so before
the command runs: one line naming both options, exit 2, nothing written, no Ray.
tests/pipelines/command_line/test_cli_generated_bad_lines.py builds one command line per rule from
this table and the parsers, so a new rule is tested without editing the test.

A rule reads which options the command line gave, not only the parsed values: a value
equal to the default is still a choice (`--feedback full --protocol public` asked for a
feedback the public protocol never sends, and was accepted because `full` is the default).

What a table cannot say stays with its command: whether `--engine` and the config that
`--model` names agree (pipelines.engines.models.model_resolution reads the config for that), or a
path inside another (`human-export --key` inside `--out`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Literal

from pipelines.command_line.renames import hyphenated
from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.geobuild.engines import GEOBUILD_ENGINES
from store.errors import UsageError

__all__ = ["CONFLICTS", "Conflict", "Use", "given_options", "refuse_conflicts"]


@dataclass(frozen=True)
class Use:
    """An option as a rule reads it: given on the command line (no `values`), or holding
    one of `values` (given or by default)."""

    flag: str
    values: tuple[object, ...] = ()

    def holds(self, action: argparse.Action, args: argparse.Namespace, given: set[str]) -> bool:
        """Whether the parsed command line (`given`: the options it gave) meets this use."""
        if not self.values:
            return action.dest in given
        return getattr(args, action.dest) in self.values

    def shown(self, action: argparse.Action, args: argparse.Namespace) -> str:
        """The option as the user would write it: `--format csv`, `--no-qualification-page`."""
        value = getattr(args, action.dest)
        if isinstance(action, argparse.BooleanOptionalAction):
            return action.option_strings[0 if value else 1]
        return self.flag if action.nargs == 0 else f"{self.flag} {value}"


@dataclass(frozen=True)
class Conflict:
    """`first` excludes `second` (never both), or `first` needs `second` (not one alone)."""

    commands: tuple[str, ...]
    first: Use
    kind: Literal["excludes", "needs"]
    second: Use
    why: str

    def refusal(
        self, parser: argparse.ArgumentParser, args: argparse.Namespace, given: set[str]
    ) -> str | None:
        """The one-line refusal when the parsed command line breaks this rule, else None."""
        actions = parser._option_string_actions
        first, second = actions[self.first.flag], actions[self.second.flag]
        if not self.first.holds(first, args, given):
            return None
        if self.second.holds(second, args, given) != (self.kind == "excludes"):
            return None
        one = self.first.shown(first, args)
        if self.kind == "excludes":
            return f"{one} and {self.second.shown(second, args)} cannot go together: {self.why}"
        wanted = self.second.flag
        if self.second.values:
            wanted += " " + " or ".join(str(v) for v in self.second.values)
        return f"{one} needs {wanted}: {self.why}"


SUMMARIES = ("summarize", "geobuild-summarize", "probe-summarize")
# Engines that load no model, so that there is no model code to trust.
MODEL_FREE = {
    "evaluate": BASELINES,
    "geobuild": (*BASELINES, *GEOBUILD_ENGINES),
}

CONFLICTS: tuple[Conflict, ...] = (
    Conflict(
        SUMMARIES, Use("--csv-dir"), "needs", Use("--format", ("csv",)), "it writes CSV files"
    ),
    Conflict(
        SUMMARIES, Use("--all"), "excludes", Use("--tables"),
        "--all prints every table, --tables only those it names",
    ),
    Conflict(
        ("geobuild",), Use("--protocol", ("public",)), "needs", Use("--public-repo"),
        "a GeoBuildBench checkout, whose prompts/ the public protocol reads",
    ),
    Conflict(
        ("geobuild",), Use("--public-repo"), "needs", Use("--protocol", ("public",)),
        "only the public protocol reads its prompts",
    ),
    Conflict(
        ("geobuild",), Use("--feedback"), "excludes", Use("--protocol", ("public",)),
        "the public protocol's agent gets the GeoBuildBench runner's observations",
    ),
    Conflict(
        ("geobuild",), Use("--stratified-sample"), "needs", Use("--stratify-from"),
        "the sample is drawn on an earlier run's outcomes",
    ),
    Conflict(
        ("geobuild",), Use("--stratify-from"), "needs", Use("--stratified-sample"),
        "it names the run that sample is drawn on",
    ),
    Conflict(
        ("geobuild",), Use("--sample-seed"), "needs", Use("--stratified-sample"),
        "it seeds that sample only",
    ),
    *(
        Conflict(
            (command,), Use("--trust-remote-code"), "excludes", Use("--engine", engines),
            "that engine loads no model",
        )
        for command, engines in MODEL_FREE.items()
    ),
    *(
        Conflict(
            ("show-item",), Use("--items"), "excludes", Use(flag),
            "the item is read from the table, not generated again",
        )
        for flag in ("--per-task", "--item-seed", "--image-size")
    ),
    Conflict(
        ("human-export",), Use("--qualification-pass"), "excludes",
        Use("--qualification-page", (False,)), "there is no examination to pass",
    ),
)  # fmt: skip


def given_options(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The destinations of the options `argv` gives itself, not by default: parsed once
    more into a namespace whose every attribute is already set, so argparse fills in no
    default and what changed was given (abbreviations and `--x=v` included)."""
    unset = object()
    dests = {a.dest for a in parser._actions if a.dest != argparse.SUPPRESS}
    namespace = argparse.Namespace(**dict.fromkeys(dests, unset))
    parser.parse_args(hyphenated(argv, parser._option_string_actions), namespace=namespace)
    return {dest for dest, value in vars(namespace).items() if value is not unset}


def refuse_conflicts(
    command: str, parser: argparse.ArgumentParser, argv: list[str], args: argparse.Namespace
) -> None:
    """UsageError naming both options of the first rule of CONFLICTS that the parsed
    command line `args` (from `argv`) breaks: an `excludes` rule before a `needs` one, as
    two options the user wrote that clash say more than one left out (`--feedback full
    --protocol public` is about the feedback, not the missing --public-repo)."""
    rules = sorted(
        (rule for rule in CONFLICTS if command in rule.commands), key=lambda r: r.kind != "excludes"
    )
    if not rules:
        return
    given = given_options(parser, argv)
    for rule in rules:
        refusal = rule.refusal(parser, args, given)
        if refusal is not None:
            raise UsageError(refusal)
