"""Starting Ray: a cluster when RAY_ADDRESS names one, else a local single-node instance."""

from __future__ import annotations

import logging
import os


def ensure_ray(num_cpus: int | None = None) -> None:
    """Connect to RAY_ADDRESS if set, else start local Ray (no dashboard); idempotent."""
    import ray

    if ray.is_initialized():
        return
    address = os.environ.get("RAY_ADDRESS")
    # Workers inherit one thread per process: two threads on two busy cores were measured
    # 5-25x slower than one.
    env = {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    if address:
        ray.init(address=address, runtime_env={"env_vars": env}, logging_level=logging.WARNING)
    else:
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            runtime_env={"env_vars": env},
            logging_level=logging.WARNING,
        )
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = True
    ctx.print_on_execution_start = False
