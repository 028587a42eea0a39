"""Logging for every command: `--log-level` and `--verbose`, and Ray's own noise held down.

Our packages log at `--log-level` (INFO by default: the few INFO lines we write are meant
for the user, e.g. a resume's count); everything else (Ray, httpx, huggingface) passes only
from WARNING up unless `--verbose`, so a library's per-request INFO chatter stays out.

Ray 2.60 prints, on every start and dataset, lines that say nothing about the run. Each is
held down at its source logger (levels, not text filters, so the file logs Ray writes under
its session directory still follow the logger level it sets). `--verbose` lifts them all
and starts Ray at INFO, its own default.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TextIO

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_LEVEL = "INFO"
# Top-level packages of this repository: their loggers follow --log-level.
OUR_PACKAGES = ("pipelines", "store", "probes", "actors", "geometry")

# Ray's loggers that print nothing a researcher needs, and the level each is held at.
RAY_QUIET_LEVELS: dict[str, int] = {
    # WARNING "Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=..."
    # (ray.init of a local instance, and a connect when ~/.ray/auth_token exists).
    "ray._private.authentication.authentication_token_setup": logging.ERROR,
    # INFO "[dataset]: A new progress UI is available..." (a terminal), INFO "Progress
    # will be logged because stdout is a non-interactive terminal." (a pipe or file) and
    # WARNING "Progress bars disabled. To enable, set ..." (once per process: ensure_ray
    # disables Ray Data's bars unless --verbose, and the commands print their own).
    "ray.data._internal.progress": logging.ERROR,
    # INFO "Dataset dataset_... execution finished in 2.20 seconds", once per dataset: the
    # command's own progress line and step time say it.
    "ray.data._internal.execution.streaming_executor": logging.WARNING,
    # WARNING "Truncating long operator name to 100 characters..." (the truncated bar
    # names are what we want; only the notice goes).
    "ray.data._internal.progress.utils": logging.ERROR,
    # ERROR "Exception occurred in user code, with the abbreviated stack trace below..."
    # and ERROR "An exception was raised from a task of operator ...": the exception itself
    # reaches the driver, which prints it once (one line for a store that stopped
    # answering, pipelines.cli; Python's traceback for the rest).
    "ray.data.exceptions": logging.CRITICAL,
    "ray.data._internal.execution.streaming_executor_state": logging.CRITICAL,
}
# Without a terminal, Ray Data's progress display: a block of 7 lines per dataset every 10 s
# (247 lines in one demo). Held at WARNING unless --verbose: the commands print their own
# progress (pipelines.terminal.progress), a line every 30 s at most.
RAY_PROGRESS_LOGGER = "ray.data._internal.progress.logging_progress"

# Hugging Face's tqdm bars ("Loading weights", "Writing model shards"): huggingface_hub
# reads this variable once, at import, and transformers follows it. Set unless --verbose on
# a non-terminal, before any command imports them (and inherited by Ray's local workers).
HF_BARS_OFF = "HF_HUB_DISABLE_PROGRESS_BARS"

_settings = {"verbose": False}


class _Stderr(logging.StreamHandler):
    """A handler that writes to whatever sys.stderr is at the time of each record (pytest's
    capture, or a stream the caller swapped in), not the one at configuration time."""

    @property
    def stream(self) -> TextIO:
        """The current sys.stderr."""
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass  # StreamHandler.__init__ assigns it; the property above always wins


class _Formatter(logging.Formatter):
    """INFO as the bare message; other levels prefixed `warning: `, `error: `, `debug: `
    (and the logger's name, for DEBUG), as the CLI's one-line `error: ...` reads."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line (and its traceback, if any)."""
        text = record.getMessage()
        if record.levelno == logging.DEBUG:
            text = f"debug {record.name}: {text}"
        elif record.levelno != logging.INFO:
            text = f"{record.levelname.lower()}: {text}"
        if record.exc_info:
            text = f"{text}\n{self.formatException(record.exc_info)}"
        return text


_handler = _Stderr()
_handler.setFormatter(_Formatter())


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    """`--log-level` and `--verbose`, which every command takes."""
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        default=DEFAULT_LEVEL,
        help="least severe message of this program shown on stderr",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show Ray's start-up banners, notices and INFO logs, and other libraries' logs",
    )


def configure(level: str = DEFAULT_LEVEL, verbose: bool = False) -> None:
    """Set up logging for one command; idempotent (main runs many commands in tests)."""
    _settings["verbose"] = verbose
    numeric = logging.getLevelNamesMapping()[level]
    root = logging.getLogger()
    if _handler not in root.handlers:
        root.addHandler(_handler)
    # Other libraries: their warnings always, their INFO/DEBUG only when asked for.
    root.setLevel(numeric if verbose else max(numeric, logging.WARNING))
    for package in OUR_PACKAGES:
        logging.getLogger(package).setLevel(numeric)
    # Ray's loggers need no `import ray` to be set: they are looked up by name, and Ray's
    # own configuration sets the levels of "ray" and "ray.data" only, not of these.
    for name, quiet in RAY_QUIET_LEVELS.items():
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else quiet)
    logging.getLogger(RAY_PROGRESS_LOGGER).setLevel(logging.NOTSET if verbose else logging.WARNING)
    if not verbose and not sys.stderr.isatty():
        os.environ.setdefault(HF_BARS_OFF, "1")


def verbose() -> bool:
    """Whether this command runs with `--verbose`."""
    return _settings["verbose"]


def ray_logging_level() -> int:
    """The level for `ray.init(logging_level=...)`: Ray's own INFO when verbose."""
    return logging.INFO if verbose() else logging.WARNING
