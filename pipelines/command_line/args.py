"""argparse `type=` validators shared by the command modules, and UTF-8 input readers.

A validator turns the flag's text into a value or raises `ArgumentTypeError` saying what
the valid values are; argparse adds the flag's name, and `pipelines.cli` prints that as one
line and exits 2. So a bad number or path is refused while parsing: before Ray starts and
before anything is written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from store.errors import UsageError
from store.storage import KNOWN_SCHEMES, Location, RemotePath, StorageURIError, is_uri

# The attribute of a validator holding its range as help shows it (pipelines.cli.HelpFormatter).
VALID_RANGE = "valid_range"


def _refuse(requirement: str, text: str) -> argparse.ArgumentTypeError:
    shown = text if text.strip() == text and text else repr(text)
    return argparse.ArgumentTypeError(f"must be {requirement}, got {shown}")


# Upper bounds. Every numeric option has one (help shows it as "range: low..high"): a
# value past what Arrow's int64 columns, numpy, torch or vLLM take passed the parser,
# started Ray and crashed inside it, leaving settings.json behind (issue 26).
SEED_MAX = 2**63 - 1  # int64: result columns, torch.Generator.manual_seed, vLLM
COUNT_MAX = 2**31 - 1  # any other count (rows, replicas, rounds, trials): int32
MAX_TOKENS_MAX = 1 << 20  # tokens per reply: beyond every context length of configs/models
IMAGE_SIZE_MAX = 4096  # image side in pixels: a 4096^2 RGBA figure is 64 MiB already
PER_TASK_MAX = 10_000  # items per task: item IDs number them with four digits
REPLICAS_MAX = 1024  # actors or processes of one kind (pool size, workers, executors)
SECONDS_MAX = 86_400.0  # any duration option: a day
TEMPERATURE_MAX = 10.0  # past it sampling is uniform noise (OpenAI's servers stop at 2)
FLOAT_MAX = 1e6  # any other non-negative number (a GPU count)


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An integer within [low, high]."""
    requirement = f"an integer from {low} to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _refuse(requirement, text) from None
        if not low <= value <= high:
            raise _refuse(requirement, text)
        return value

    parse.__name__ = f"int_{low}_to_{high}"
    setattr(parse, VALID_RANGE, f"{low}..{high}")
    return parse


def int_at_least(low: int) -> Callable[[str], int]:
    """An integer from `low` to COUNT_MAX."""
    return int_in(low, COUNT_MAX)


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)
seed_int = int_in(0, SEED_MAX)
max_tokens_int = int_in(1, MAX_TOKENS_MAX)
per_task_int = int_in(1, PER_TASK_MAX)
replicas_int = int_in(1, REPLICAS_MAX)


def image_size_int(low: int) -> Callable[[str], int]:
    """An image side in pixels, from `low` to IMAGE_SIZE_MAX."""
    return int_in(low, IMAGE_SIZE_MAX)


def finite_float(
    low: float, high: float, *, above: bool = False, below: bool = False
) -> Callable[[str], float]:
    """A finite number (NaN and inf refused) within [low, high]; `above` excludes low,
    `below` excludes high."""
    requirement = (
        f"a finite number {'>' if above else '>='} {low:g} and {'<' if below else '<='} {high:g}"
    )

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _refuse(requirement, text) from None
        too_low = value <= low if above else value < low
        too_high = value >= high if below else value > high
        if not math.isfinite(value) or too_low or too_high:
            raise _refuse(requirement, text)
        return value

    parse.__name__ = "finite_float"
    setattr(
        parse,
        VALID_RANGE,
        f"{'above ' if above else ''}{low:g}..{high:g}{' (exclusive)' if below else ''}",
    )
    return parse


share = finite_float(0.0, 1.0)  # a fraction, 0..1
share_below_one = finite_float(0.0, 1.0, below=True)  # a fraction that leaves something
percent = finite_float(0.0, 100.0)
# An accuracy threshold on binary tasks, in percent: below 50 (chance) lists transfers
# worse than a coin, and a share such as 0.7 (or 2, a typo) would list every transfer.
binary_accuracy_percent = finite_float(50.0, 100.0)
non_negative_float = finite_float(0.0, FLOAT_MAX)
seconds_float = finite_float(0.0, SECONDS_MAX)
positive_seconds = finite_float(0.0, SECONDS_MAX, above=True)
positive_float = finite_float(0.0, FLOAT_MAX, above=True)
temperature_float = finite_float(0.0, TEMPERATURE_MAX)


def name_text(text: str) -> str:
    """A name (a model, revision, encoder): not empty, not only spaces. An empty `--model`
    passed every check and named a results folder `model=model`."""
    if not text.strip():
        raise _refuse("a non-empty name", text)
    return text


def path_component(text: str) -> str:
    """A name used as one folder name under a results directory: no separators, not `.`
    or `..`, so it cannot reach outside that directory."""
    if not text or text in (".", "..") or any(c in text for c in "/\\\0"):
        raise _refuse("a plain name (no '/', '\\', '..' or empty)", text)
    return text


def existing_dir(text: str) -> Path:
    """A directory that exists ("" is refused, not read as the working directory)."""
    path = Path(text)
    if not text.strip() or not path.is_dir():
        what = "a file" if path.is_file() else "missing"
        raise _refuse(f"an existing directory ({what})", text)
    return path


def existing_file(text: str) -> Path:
    """A file that exists."""
    path = Path(text)
    if not path.is_file():
        what = "a directory" if path.is_dir() and text.strip() else "missing"
        raise _refuse(f"an existing file ({what})", text)
    return path


def output_dir(text: str) -> Path:
    """A local directory to write into: absent (created later) or a directory, never a file,
    under a folder this process may write; a storage URI is refused (the commands that take
    this write local files only: a report, probe trials, images)."""
    if not text.strip():
        raise _refuse("a directory path", text)
    if is_uri(text):
        raise _refuse("a local directory (this command cannot write to a storage URI)", text)
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; give a directory (existing or new)")
    _check_writable(path, text)
    return path


def _check_writable(path: Path, text: str) -> None:
    """The nearest existing folder of `path` is a folder this process may write into: a
    file on the way (`--out notes.txt/x`) or a read-only folder gave a traceback at mkdir."""
    existing = path.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: {existing} is not writable by this user")


def _uri(text: str) -> RemotePath:
    """A storage URI, checked for form only: the store is reached when the run starts."""
    try:
        path = RemotePath.parse(text)
    except StorageURIError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if path.scheme not in KNOWN_SCHEMES:
        raise _refuse(f"a local path or a URI of {', '.join(KNOWN_SCHEMES)}", text)
    return path


def output_location(text: str) -> Location:
    """Where results go: a local directory (as `output_dir`) or a storage URI
    (store.storage), e.g. s3://bucket/results."""
    return _uri(text) if is_uri(text) else output_dir(text)


def any_location(text: str) -> Location:
    """A local path or a storage URI, whether or not it exists (the command checks)."""
    return _uri(text) if is_uri(text) else Path(text)


def results_location(text: str) -> Location:
    """Results to read: an existing local directory or a storage URI (a URI holding no
    results is refused by the reader, which names what it looked for)."""
    return _uri(text) if is_uri(text) else existing_dir(text)


def read_utf8(path: Location, what: str) -> str:
    """The text of an input file; unreadable or not UTF-8 is a UsageError naming it."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise UsageError(f"{what} {path} is not UTF-8 text (byte {err.start})") from err
    except OSError as err:
        raise UsageError(f"{what} {path} cannot be read: {err.strerror}") from err


def read_json_object(path: Location, what: str, keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON object from a file, holding `keys`; anything else is a UsageError naming it."""
    try:
        data = json.loads(read_utf8(path, what))
    except json.JSONDecodeError as err:
        where = f"{err.msg} at line {err.lineno}"
        raise UsageError(f"{what} {path} is not valid JSON: {where}") from err
    if not isinstance(data, dict):
        raise UsageError(f"{what} {path} is not a JSON object")
    missing = [k for k in keys if k not in data]
    if missing:
        raise UsageError(f"{what} {path} lacks {', '.join(missing)}; regenerate it")
    return data
