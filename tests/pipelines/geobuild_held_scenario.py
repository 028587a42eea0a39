"""`python -m tests.pipelines.geobuild_held_scenario MARKER GEOBUILD-ARGS...`: the `geosee`
console command (pipelines.cli.entry, its signal handling included) running geobuild with
each batch 0.5 s slower in a Ray step (so a round lasts long enough to signal mid-way).
MARKER is created once the driver has counted finished conversations, so a test signals
the round when finished ones are held and none may yet be on disk (test_held_rows.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import pipelines.geobuild.rounds as rounds_module
from pipelines import cli
from tests.pipelines.held_rows_scenario import mark_once_counted

drop_messages = rounds_module._drop_messages


def slow_drop_messages(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The loop's own step, 0.5 s slower (defined here, so Ray's workers import this one)."""
    time.sleep(0.5)
    return drop_messages(batch)


def main() -> None:
    marker, sys.argv[1:] = Path(sys.argv[1]), ["geobuild", *sys.argv[2:]]
    rounds_module._drop_messages = slow_drop_messages
    mark_once_counted(marker)
    cli.entry()


if __name__ == "__main__":
    main()
