"""`python -m tests.pipelines.held_rows_scenario MARKER EVALUATE-ARGS...`: the `geosee`
console command (pipelines.cli.entry, its signal handling included) running evaluate with
the oracle answering in an actor pool, as a model engine does (its rows go to the driver,
store.held_rows), not as the baseline's write-in-step task. MARKER is created
once the driver has counted answered rows, so a test signals the run when answered rows
are held and none may yet be on disk (test_held_rows.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pipelines.noregeo.evaluate_pipeline as pipeline_module
from pipelines import cli
from pipelines.engines.stages.engine_stages import oracle_actor_stage
from pipelines.terminal.progress import Progress


def mark_once_counted(marker: Path) -> None:
    """From now on, create `marker` once any progress count is above 0."""
    update = Progress.update

    def update_and_mark(self: Progress, n: int = 1) -> None:
        update(self, n)
        if self.done > 0:
            marker.touch()

    Progress.update = update_and_mark  # type: ignore[method-assign]


def main() -> None:
    marker, sys.argv[1:] = Path(sys.argv[1]), ["evaluate", *sys.argv[2:]]
    pipeline_module.STAGES = {**pipeline_module.STAGES, "oracle": oracle_actor_stage}
    mark_once_counted(marker)
    cli.entry()


if __name__ == "__main__":
    main()
