"""`python -m tests.pipelines.vllm_count_scenario COUNTS STOP_AFTER COMMAND ARGS...`: the
`geosee` console command (pipelines.cli.entry, its signal handling included) running
`evaluate` or `geobuild` with the vllm engine (vLLM's CPU build), counting at the source the
answers vLLM makes: each request's `generate_async` (Ray's wrapper around vLLM's AsyncLLM)
appends one line to COUNTS when vLLM returns its answer, before anything of ours sees it.

With STOP_AFTER > 0, the last row of an engine batch waits, before it is asked, until COUNTS
holds STOP_AFTER answers; then the first such row to get there hangs for good (it creates
COUNTS + ".stopped"; once that exists no row hangs again, on any node), the others go on:
the hung row's batch has its other rows answered and never leaves the engine, so only what
keeps answers inside it (the request cache) saves them from the signal or the lost node that
comes next (vllm/test_paid_once_vllm.py, vllm/test_lost_node_vllm.py). COUNTS must be where
every node sees it. The engine stage's own class is subclassed, whichever it is (Ray's, or
ours with the cache)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from pipelines import cli
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages import vllm_path, vllm_resident
from pipelines.engines.stages.options import EngineOptions


def counting(base: type) -> type:
    """`base` (a vLLM engine stage UDF) counting vLLM's answers, and hanging once told to."""

    class CountingEngine(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, counts: str, stop_after: int, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            counted, stopped = Path(counts), Path(f"{counts}.stopped")
            ask = self.llm.generate_async
            size = kwargs["batch_size"]

            def made() -> int:
                return len(counted.read_text().splitlines()) if counted.exists() else 0

            async def generate_async(row: dict[str, Any]) -> Any:
                last = row[self.IDX_IN_BATCH_COLUMN] == size - 1
                if stop_after and last and not stopped.exists():
                    while made() < stop_after:  # the other rows are answered meanwhile
                        await asyncio.sleep(0.05)
                    if _first_to_stop(stopped):
                        await asyncio.Event().wait()  # for good: the signal or loss comes
                answer = await ask(row)
                with counted.open("a") as f:  # one line per answer vLLM made
                    f.write(f"{row.get('request_key')}\n")
                return answer

            self.llm.generate_async = generate_async

    return CountingEngine


def _first_to_stop(stopped: Path) -> bool:
    """Create `stopped`; False if another row (on any node) did first."""
    try:
        os.close(os.open(stopped, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def main() -> None:
    counts, stop_after = sys.argv[1], int(sys.argv[2])
    sys.argv[1:] = sys.argv[3:]
    build = vllm_path.build_vllm_processor

    def counting_processor(cfg: ModelConfig, opts: EngineOptions) -> Any:
        processor = build(cfg, opts)
        engine = vllm_path.engine_stage_of(processor)
        engine.fn = counting(engine.fn)
        engine.fn_constructor_kwargs = {
            **engine.fn_constructor_kwargs,
            "counts": counts,
            "stop_after": stop_after,
        }
        return processor

    # Where before_rows (the canary) and GeoBuild's resident engine look it up.
    vllm_path.build_vllm_processor = counting_processor
    vllm_resident.build_vllm_processor = counting_processor
    cli.entry()


if __name__ == "__main__":
    main()
