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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from store.errors import UsageError
from store.storage import KNOWN_SCHEMES, Location, RemotePath, StorageURIError, is_uri


def _refuse(requirement: str, text: str) -> argparse.ArgumentTypeError:
    shown = text if text.strip() == text and text else repr(text)
    return argparse.ArgumentTypeError(f"must be {requirement}, got {shown}")


def int_at_least(low: int) -> Callable[[str], int]:
    """An integer >= `low`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _refuse(f"an integer >= {low}", text) from None
        if value < low:
            raise _refuse(f"an integer >= {low}", text)
        return value

    parse.__name__ = f"int_at_least_{low}"
    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def finite_float(
    low: float | None = None,
    high: float | None = None,
    *,
    above: bool = False,
    below: bool = False,
) -> Callable[[str], float]:
    """A finite number (NaN and inf refused) within [low, high]; `above` excludes low,
    `below` excludes high."""
    parts = ["a finite number"]
    if low is not None:
        parts.append(f"{'>' if above else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'and ' if low is not None else ''}{'<' if below else '<='} {high:g}")
    requirement = " ".join(parts)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _refuse(requirement, text) from None
        too_low = low is not None and (value <= low if above else value < low)
        too_high = high is not None and (value >= high if below else value > high)
        if not math.isfinite(value) or too_low or too_high:
            raise _refuse(requirement, text)
        return value

    parse.__name__ = "finite_float"
    return parse


share = finite_float(0.0, 1.0)  # a fraction, 0..1
share_below_one = finite_float(0.0, 1.0, below=True)  # a fraction that leaves something
percent = finite_float(0.0, 100.0)
non_negative_float = finite_float(0.0)
positive_float = finite_float(0.0, above=True)


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
    """A directory to write into: absent (created later) or a directory, never a file."""
    if not text.strip():
        raise _refuse("a directory path", text)
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; give a directory (existing or new)")
    return path


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
