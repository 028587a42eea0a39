"""Ray actor that runs probe trials: one trial at a time, on its own GPU or CPU share."""

from __future__ import annotations

import os
from pathlib import Path


class ProbeTrainer:
    """Runs `probes.grid.run_trial`; wrap with `ray.remote(...)` and the trial's resources.

    Heavy imports happen in `__init__` so the driver never loads torch models itself.
    """

    def __init__(self, out: str):
        import torch

        if not torch.cuda.is_available():
            # One thread per CPU worker: two threads on two busy cores were measured 5-25x slower.
            torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
        self.out = Path(out)

    def run(self, trial: object) -> str:
        """Train and test one trial; returns the path of its result file."""
        from probes.grid import Trial, run_trial

        assert isinstance(trial, Trial)
        return str(run_trial(trial, self.out))
