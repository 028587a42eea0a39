"""vLLM on CPU: the project's `evaluate --engine vllm` pipeline against bare `vllm.LLM.chat`.

Both answer the same rows (the text setup of every task: the same messages and per-row
answer grammar) with the same tiny random model, one after the other in this process:

1. bare: `vllm.LLM(...)` (load timed apart), then one `LLM.chat` call over all rows;
2. pipeline: `pipelines.noregeo.evaluate.evaluate` with the `vllm` stage (Ray's `ray.data.llm`
   processor: chat template, tokenize, engine, detokenize; then scoring and Parquet shards).
   Its wall time includes the engine load, so it is also shown less the bare load time.

Printed side by side with the ratio bare/pipeline (rows per second). Needs .venv-vllm:
  .venv-vllm/bin/python bench/vllm.py [--model DIR] [--per-task 8] [--max-tokens 32]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder heads sys.path and `import vllm` would find this
# file (bench/vllm.py) instead of the vLLM package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import pyarrow.parquet as pq  # noqa: E402

from geometry.tasks.registry import all_tasks  # noqa: E402
from pipelines.engines.model_config import resolve_model  # noqa: E402
from pipelines.engines.ray_session import ensure_ray  # noqa: E402
from pipelines.engines.requests import SamplingConfig, add_requests  # noqa: E402
from pipelines.engines.stages import EngineOptions  # noqa: E402
from pipelines.engines.tiny_model import build_tiny_model  # noqa: E402
from pipelines.engines.vllm_config import CPU_MEMORY_SHARE  # noqa: E402
from pipelines.noregeo.evaluate import evaluate  # noqa: E402
from pipelines.noregeo.generate import generate  # noqa: E402
from pipelines.noregeo.run_settings import EvaluateSettings  # noqa: E402


def request_rows(files: list[Path], model: str, sampling: SamplingConfig) -> list[dict[str, Any]]:
    """The chat requests `evaluate` would send for the items in `files`, as plain rows."""
    rows: list[dict[str, Any]] = []
    for path in files:
        table = pq.read_table(path)  # text setup only: generated that way
        rows += add_requests(table, model, "local", sampling, text_only=True).to_pylist()
    return rows


def bare(model: str, rows: list[dict[str, Any]], max_model_len: int) -> tuple[float, float]:
    """(load seconds, generation seconds) of bare vLLM over the rows."""
    # By name: to mypy, `vllm` is this file (bench/ heads its search path), which has no LLM.
    vllm = importlib.import_module("vllm")
    from vllm.sampling_params import StructuredOutputsParams

    start = time.perf_counter()
    llm = vllm.LLM(
        model=model,
        dtype="float32",
        max_model_len=max_model_len,
        enforce_eager=True,
        gpu_memory_utilization=CPU_MEMORY_SHARE,  # as the pipeline asks on CPU
    )
    loaded = time.perf_counter()
    params = [
        vllm.SamplingParams(
            temperature=r["sampling_params"]["temperature"],
            max_tokens=r["sampling_params"]["max_tokens"],
            seed=r["sampling_params"]["seed"],
            structured_outputs=StructuredOutputsParams(
                grammar=r["sampling_params"]["structured_outputs"]["grammar"]
            ),
        )
        for r in rows
    ]
    outputs = llm.chat([r["messages"] for r in rows], params, use_tqdm=False)
    done = time.perf_counter()
    assert len(outputs) == len(rows)
    del llm
    gc.collect()
    return loaded - start, done - loaded


def main() -> None:
    """Answer the same rows with bare vLLM, then the pipeline; print both rates and their ratio."""
    import torch

    torch.set_num_threads(1)
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=None, help="checkpoint; default: tiny")
    parser.add_argument("--per-task", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    model = args.model or build_tiny_model("llm", work / "tiny-llm", seed=0)
    cfg = resolve_model("vllm", str(model))
    tasks = list(all_tasks())
    generate(work / "items", tasks, args.per_task, seed=0, setups=["text"], image_size=128)
    files = sorted((work / "items").glob("part-*.parquet"))
    sampling = SamplingConfig(temperature=0.0, max_tokens=args.max_tokens, seed=0)
    rows = request_rows(files, cfg.repo, sampling)

    load_s, bare_s = bare(cfg.repo, rows, cfg.max_model_len)

    ensure_ray(num_cpus=2)
    start = time.perf_counter()
    run = EvaluateSettings(
        tasks=tasks, setups=["text"], sampling=sampling, engine_options=EngineOptions(batch_size=64)
    )
    written = evaluate(files, cfg, run, work / "out")
    pipe_s = time.perf_counter() - start
    assert written == len(rows), (written, len(rows))

    bare_rate = len(rows) / bare_s
    pipe_rate = len(rows) / pipe_s
    adjusted = len(rows) / max(pipe_s - load_s, 1e-9)
    print(f"rows: {len(rows)} (text setup, {args.per_task} per task, max_tokens {args.max_tokens})")
    print(
        f"bare vllm.LLM.chat: load {load_s:.1f} s, generate {bare_s:.2f} s, {bare_rate:.1f} rows/s"
    )
    print(f"pipeline evaluate --engine vllm: {pipe_s:.1f} s wall incl. engine load")
    print(f"  {pipe_rate:.2f} rows/s; less the bare load time: {adjusted:.2f} rows/s")
    ratio, ratio_adjusted = bare_rate / pipe_rate, bare_rate / adjusted
    print(f"ratio bare/pipeline: {ratio:.1f}x (load-adjusted {ratio_adjusted:.1f}x)")


if __name__ == "__main__":  # vLLM spawns its engine core: the guard keeps it from re-running
    main()
