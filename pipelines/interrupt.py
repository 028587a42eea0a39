"""Ctrl-C: one line saying what is saved and how to resume, and exit 130 (128 + SIGINT).

A command that writes results registers, once it knows its results folder, how to count
what that folder holds (`on_interrupt`); `pipelines.cli.entry` prints the line. Counting
reads shard footers only: the run's writers may still be finishing, and nothing here may
move or sweep a file under them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from store.shards import shard_files
from store.storage import Location, parquet_file

# 128 + SIGINT, as a shell reports a command that Ctrl-C ended.
EXIT_INTERRUPTED = 130

_describe_saved: Callable[[], str] | None = None


def on_interrupt(describe_saved: Callable[[], str]) -> None:
    """Register what the interrupted line says is saved, e.g. "120 rows saved in DIR"."""
    global _describe_saved
    _describe_saved = describe_saved


def interrupted_line() -> str:
    """The one line a Ctrl-C prints, counted once Ray's workers are stopped (a writer that
    was finishing its shard when the signal came would otherwise land after the count)."""
    _stop_ray()
    saved = "what finished is saved"
    if _describe_saved is not None:
        try:
            saved = _describe_saved()
        except Exception:  # a count that fails must not turn Ctrl-C into a traceback
            saved = "what finished is saved (it could not be counted)"
    return f"interrupted; {saved}; run the same command to resume"


def _stop_ray() -> None:
    """Shut down the Ray this process started or joined, if any; quietly."""
    ray = sys.modules.get("ray")
    if ray is None:
        return
    try:
        if ray.is_initialized():
            ray.shutdown()
    except Exception:  # shutting down is best effort here: the line must still be printed
        pass


def saved_rows(root: Location) -> Callable[[], str]:
    """A description counting the rows of the finished shards under a results folder."""

    def describe() -> str:
        rows = 0
        for shard in shard_files(root):
            try:
                rows += parquet_file(shard).metadata.num_rows
            except Exception:  # a shard half-written when the signal came: not saved
                continue
        return f"{rows} rows saved in {root}"

    return describe
