"""One `evaluate --engine vllm` run in a fresh driver, for bench/vllm.py: it connects to the
bench's running Ray (RAY_ADDRESS), answers the item files in JOB and prints the seconds
`evaluate` took. A fresh driver pays what a new `geosee evaluate` pays (the driver-side
imports of transformers and vLLM) but Ray's start, timed apart by the bench.

    vllm_pipeline_once.py JOB.json   (JOB: {"model": DIR, "files": [...], "out": DIR,
                                     "max_tokens", "batch_size"}, written by bench/vllm.py)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

# As in bench/vllm.py: this folder heads sys.path, where `vllm` would be bench/vllm.py.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import pyarrow.parquet as pq  # noqa: E402
import torch  # noqa: E402

from geometry.tasks.registry import all_tasks  # noqa: E402
from pipelines.engines.models.model_resolution import resolve_model  # noqa: E402
from pipelines.engines.prompts.requests import SamplingConfig  # noqa: E402
from pipelines.engines.session.ray_session import ensure_ray  # noqa: E402
from pipelines.engines.stages.options import EngineOptions  # noqa: E402
from pipelines.noregeo.evaluate_pipeline import evaluate  # noqa: E402
from pipelines.noregeo.run_settings import EvaluateSettings  # noqa: E402


def main() -> None:
    """Connect, run `evaluate` over the files, check every row was written, print "took S"."""
    torch.set_num_threads(1)
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    ensure_ray()  # RAY_ADDRESS: the bench's Ray
    files = [Path(f) for f in job["files"]]
    run = EvaluateSettings(
        tasks=list(all_tasks()),
        setups=["text"],
        sampling=SamplingConfig(temperature=0.0, max_tokens=job["max_tokens"], seed=0),
        engine_options=EngineOptions(batch_size=job["batch_size"]),
    )
    cfg = resolve_model("vllm", job["model"])
    start = time.perf_counter()
    written = evaluate(files, cfg, run, Path(job["out"]))
    took = time.perf_counter() - start
    assert written == sum(pq.read_metadata(f).num_rows for f in files), written
    print(f"took {took:.3f}", flush=True)


if __name__ == "__main__":  # vLLM spawns its engine core: the guard keeps it from re-running
    main()
