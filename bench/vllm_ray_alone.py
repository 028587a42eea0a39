"""Ray's own vLLM processor alone, for bench/vllm.py: the same rows, engine settings and
stage CPU shares as the pipeline's `vllm` stage, through `ray.data.llm.build_processor` with
no code of this project in the data path (rows in, generated text out). A fresh driver
connects to the bench's running Ray (RAY_ADDRESS) as the pipeline's does (`ensure_ray`: one
thread per worker); like the pipeline's run (bench/vllm_pipeline_once.py) it pays the
driver-side import of vLLM inside Ray's processor builder, with torch imported before the
clock starts. Prints the seconds from building the processor to the last row.

    vllm_ray_alone.py JOB.json   (JOB: {"model": DIR, "engine": {...}, "batch_size",
                                 "max_concurrent_batches", "stage_cpus", "light_cpus",
                                 "rows": [{messages, sampling_params}, ...]}, written by
                                 bench/vllm.py)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

# As in bench/vllm.py: this folder heads sys.path, where `vllm` would be bench/vllm.py.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]


def text_only(row: dict[str, Any]) -> dict[str, Any]:
    """Ray's postprocess: the generated text alone."""
    return {"text": row["generated_text"]}


def main() -> None:
    """Connect, build Ray's processor, run the rows, print "took SECONDS"."""
    import ray
    import torch

    from pipelines.engines.session.ray_session import ensure_ray

    torch.set_num_threads(1)
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    ensure_ray()  # RAY_ADDRESS: the bench's Ray, with the pipeline's worker settings
    stage = {"enabled": True, "num_cpus": job["stage_cpus"]}
    light = {"num_cpus": job["light_cpus"]}
    start = time.perf_counter()
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    config = vLLMEngineProcessorConfig(
        model_source=job["model"],
        engine_kwargs=job["engine"],
        concurrency=(1, 1),
        batch_size=job["batch_size"],
        max_concurrent_batches=job["max_concurrent_batches"],
        should_continue_on_error=True,
        prepare_multimodal_stage={"enabled": False},
        chat_template_stage=stage,
        tokenize_stage=stage,
        detokenize_stage={"enabled": False},
    )
    processor = build_processor(
        config,
        preprocess=lambda row: row,
        postprocess=text_only,
        preprocess_map_kwargs=light,
        postprocess_map_kwargs=light,
    )
    rows = processor(ray.data.from_items(job["rows"])).take_all()
    took = time.perf_counter() - start
    assert len(rows) == len(job["rows"]), len(rows)
    print(f"took {took:.3f}", flush=True)


if __name__ == "__main__":  # vLLM spawns its engine core: the guard keeps it from re-running
    main()
