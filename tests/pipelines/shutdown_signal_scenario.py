"""`python -m tests.pipelines.shutdown_signal_scenario MARKER COMMAND-ARGS...`: the `geosee`
console command (pipelines.cli.entry) with Ray's shutdown 3 s slower, whoever calls it (the
command or Ray's own exit hook, registered at import with the original function): its first
step is patched, which `ray.shutdown` imports anew on every call (Ray 2.60,
ray/_private/worker.py). MARKER is created when the shutdown starts, so a test can signal the
command while Ray shuts down after the work (test_signals.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import ray.dag.compiled_dag_node as compiled_dags

from pipelines import cli


def main() -> None:
    marker, sys.argv[1:] = Path(sys.argv[1]), sys.argv[2:]
    first_step = compiled_dags._shutdown_all_compiled_dags

    def slow_first_step() -> None:
        marker.touch()
        time.sleep(3.0)
        first_step()

    compiled_dags._shutdown_all_compiled_dags = slow_first_step
    cli.entry()


if __name__ == "__main__":
    main()
