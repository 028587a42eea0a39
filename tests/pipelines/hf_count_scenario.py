"""`python -m tests.pipelines.hf_count_scenario COUNTS STOP_AFTER EVALUATE-ARGS...`: the
`geosee` console command (pipelines.cli.entry, its signal handling included) running
evaluate with the hf engine, which counts at the source the rows its model decodes: each
sub-batch's `generate` appends one line per row to COUNTS once it returns (before anything
of ours keeps them). Sub-batches of SUB_BATCH rows in engine batches of --batch-size rows.

With STOP_AFTER > 0, the first sub-batch to start once COUNTS holds at least STOP_AFTER
rows never ends (a generate that hangs mid-batch, the earlier sub-batches of its engine
batch decoded): it creates COUNTS + ".stopped" first, so a test signals the run there, and
no row is decoded after it (noregeo/test_paid_once.py)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pipelines.noregeo.evaluate_pipeline as pipeline_module
from actors.hf_engine import HFEngine
from pipelines import cli
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages.engine_stages import _actor_stage, hf_engine_kwargs
from pipelines.engines.stages.options import EngineOptions

SUB_BATCH = 2


class CountingHFEngine(HFEngine):
    """HFEngine counting its decoded rows in a file, and hanging once told to."""

    def __init__(self, counts: str, stop_after: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.counts, self.stop_after = Path(counts), stop_after

    def _generate(self, chunk: list[Any]) -> list[tuple[str, int, str | None]]:
        done = len(self.counts.read_text().splitlines()) if self.counts.exists() else 0
        if self.stop_after and done >= self.stop_after:
            Path(f"{self.counts}.stopped").touch()
            threading.Event().wait()  # mid-batch, for good: the signal comes now
        results = super()._generate(chunk)
        with self.counts.open("a") as f:  # one line per decoded row
            f.write("".join(f"{r.prompt_ids_sha256}\n" for r in chunk))
        return results


def counting_stage(counts: str, stop_after: int) -> Any:
    """The hf stage on the CPU with CountingHFEngine in sub-batches of SUB_BATCH."""

    def build(ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
        kwargs = {**hf_engine_kwargs(cfg, opts), "batch_size": SUB_BATCH, "device": "cpu"}
        kwargs |= {"counts": counts, "stop_after": stop_after}
        return _actor_stage(ds, CountingHFEngine, kwargs, opts)

    return build


def main() -> None:
    counts, stop_after = sys.argv[1], int(sys.argv[2])
    sys.argv[1:] = ["evaluate", *sys.argv[3:]]
    stage = counting_stage(counts, stop_after)
    pipeline_module.STAGES = {**pipeline_module.STAGES, "hf": stage}
    cli.entry()


if __name__ == "__main__":
    main()
