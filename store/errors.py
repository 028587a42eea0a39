"""The error bad user input raises, from the ground floor up (re-exported by pipelines.cli)."""

from __future__ import annotations

from collections.abc import Iterator


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2, nothing written."""


def error_chain(err: BaseException) -> Iterator[BaseException]:
    """`err` and every exception it was raised from or during, each once. Ray's task errors
    keep the worker's exception in `cause`; Python's are in `__cause__` and `__context__`."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [err]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__, getattr(current, "cause", None)]
