"""vLLM on CPU: the project's `evaluate --engine vllm` pipeline against bare `vllm.LLM.chat`.

Both answer the same rows (the text setup of every task: the same messages and per-row
answer grammar) with the same model (`--model`, default a tiny random one; the real
SmolLM2-135M-Instruct checkpoint is what the goals below are stated for), one after the
other:

1. bare, in a fresh process (bench/vllm_bare.py): `import vllm`, `vllm.LLM(...)` (the two
   timed together from the process's start: the engine load), then one `LLM.chat` over all
   rows;
2. pipeline: `pipelines.noregeo.evaluate_pipeline.evaluate` with the `vllm` stage (Ray's
   `ray.data.llm` processor: chat template, tokenize, engine; then scoring and Parquet shards),
   in a fresh driver on the bench's Ray (bench/vllm_pipeline_once.py), loading its own engine
   as every `evaluate` does;
3. Ray's processor alone, in a fresh driver (bench/vllm_ray_alone.py): the same rows, engine
   settings and stages with nothing of this project in the data path.

The pipeline runs on a few rows (one per task) and on all of them: pipeline time is fixed +
rows x per-row, and the two give both (a two-point fit). The few-row runs (pipeline and
Ray's alone) and the engine loads are repeated (`--repeats`, interleaved: this machine's
speed drifts by tens of percent between minutes) and their medians used. Printed: the
fixed cost beyond the bare engine load (what the pipeline adds before its rows: actor
start-up, vLLM's import in the actor and in the driver, the processor's stages, the first
batch's latency), the same for Ray's processor alone, the difference (what this project
adds to Ray's), the per-row ratio and the load-adjusted ratio ((pipeline wall - bare load)
/ bare generation). Goals (issue 25): load-adjusted ratio at most 1.25, fixed cost under
10 s beyond the engine load. Ray is started once, before everything, and timed apart.
Needs .venv-vllm:
  .venv-vllm/bin/python bench/vllm.py [--model DIR] [--rows 2500] [--few-rows 25] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

# Run as a script, this file's folder heads sys.path and `import vllm` would find this
# file (bench/vllm.py) instead of the vLLM package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import pyarrow.parquet as pq  # noqa: E402

from geometry.tasks.registry import all_tasks  # noqa: E402
from pipelines.engines.models.model_resolution import resolve_model  # noqa: E402
from pipelines.engines.models.model_schema import ModelConfig  # noqa: E402
from pipelines.engines.models.tiny_model import build_tiny_model  # noqa: E402
from pipelines.engines.prompts.requests import SamplingConfig, add_requests  # noqa: E402
from pipelines.engines.session.ray_session import ensure_ray  # noqa: E402
from pipelines.engines.stages.options import LIGHT_CPUS, EngineOptions  # noqa: E402
from pipelines.engines.stages.vllm_config import (  # noqa: E402
    CPU_STAGE_CPUS,
    concurrent_batches,
    cpu_engine_defaults,
    engine_kwargs,
)
from pipelines.noregeo.generate import generate  # noqa: E402


def request_rows(files: list[Path], model: str, sampling: SamplingConfig) -> list[dict[str, Any]]:
    """The chat requests `evaluate` would send for the items in `files`, as plain rows."""
    rows: list[dict[str, Any]] = []
    for path in files:
        table = pq.read_table(path)  # text setup only: generated that way
        rows += add_requests(table, model, "local", sampling, text_only=True).to_pylist()
    return rows


def bare(cfg: ModelConfig, rows: list[dict[str, Any]], work: Path) -> tuple[float, float]:
    """(load seconds, chat seconds) of bare vLLM over the rows, in a fresh process
    (bench/vllm_bare.py) with the engine settings the pipeline gives the model on CPU
    (float32, eager, memory share, unchunked). The load runs from the process's start to
    its engine being ready: Python, `import vllm` and the engine, as the pipeline's engine
    actor pays them in its own fresh process."""
    job = work / "bare-job.json"
    engine = {"model": cfg.source, "max_model_len": cfg.max_model_len, **cpu_engine_defaults(cfg)}
    keep = ("messages", "sampling_params")
    job.write_text(json.dumps({"engine": engine, "rows": [{k: r[k] for k in keep} for r in rows]}))
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("vllm_bare.py")), str(job)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    load_s = chat_s = math.nan
    for line in child.stdout:
        if line.strip() == "loaded":
            load_s = time.perf_counter() - start
        elif line.startswith("chat "):
            chat_s = float(line.split()[1])
    if child.wait() != 0 or math.isnan(load_s) or (rows and math.isnan(chat_s)):
        raise SystemExit(f"bare vLLM failed (exit {child.returncode})")
    return load_s, chat_s


def child_s(script: str, job: dict[str, Any], work: Path) -> float:
    """Seconds a bench child script (a fresh driver on this Ray) reports with "took S"."""
    import ray

    path = work / f"{script}-job.json"
    path.write_text(json.dumps(job))
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name(script)), str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        check=False,
    )
    took = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("took ")]
    if done.returncode != 0 or not took:
        raise SystemExit(f"{script} failed (exit {done.returncode})")
    return float(took[0])


def pipeline_s(files: list[Path], cfg: ModelConfig, args: argparse.Namespace, out: Path) -> float:
    """Seconds `evaluate` takes over the rows in `files` in a fresh driver
    (bench/vllm_pipeline_once.py), loading its own engine as every run does."""
    job = {
        "model": cfg.source,
        "files": [str(f) for f in files],
        "out": str(out),
        "max_tokens": args.max_tokens,
        "batch_size": args.batch_size,
    }
    return child_s("vllm_pipeline_once.py", job, out.parent)


def ray_alone_s(cfg: ModelConfig, rows: list[dict[str, Any]], batch_size: int, work: Path) -> float:
    """Seconds Ray's processor alone takes over the rows (bench/vllm_ray_alone.py, a fresh
    driver on this Ray), with the pipeline's engine settings, batch size and stage shares."""
    keep = ("messages", "sampling_params")
    job = {
        "model": cfg.source,
        "engine": engine_kwargs(cfg, has_images=False),
        "batch_size": batch_size,
        "max_concurrent_batches": concurrent_batches(batch_size),
        "stage_cpus": CPU_STAGE_CPUS,
        "light_cpus": LIGHT_CPUS,
        "rows": [{k: r[k] for k in keep} for r in rows],
    }
    return child_s("vllm_ray_alone.py", job, work)


def seconds(values: list[float]) -> str:
    """The runs' seconds, for the line that gives their median."""
    return ", ".join(f"{v:.1f}" for v in values) + " s"


def text_items(work: Path, name: str, per_task: int) -> list[Path]:
    """The text setup of every task, `per_task` items each, generated under work/name."""
    generate(work / name, list(all_tasks()), per_task, seed=0, setups=["text"], image_size=128)
    return sorted((work / name).glob("part-*.parquet"))


def main() -> None:
    """Answer the same rows with bare vLLM, the pipeline and Ray's processor alone; print
    load, fixed and per-row costs and their ratios."""
    import torch

    torch.set_num_threads(1)
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=None, help="checkpoint; default: tiny")
    parser.add_argument("--rows", type=int, default=2500, help="rows (a multiple of 25 tasks)")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=EngineOptions().batch_size)
    parser.add_argument("--few-rows", type=int, default=25, help="the small run's rows")
    parser.add_argument(
        "--repeats", type=int, default=3, help="few-row runs (each side) and engine loads"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    start = time.perf_counter()
    ensure_ray(num_cpus=2)  # before generate, which would start it untimed
    ray_s = time.perf_counter() - start
    model = args.model or build_tiny_model("llm", work / "tiny-llm", seed=0)
    cfg = resolve_model("vllm", str(model))
    tasks = list(all_tasks())
    per_task = max(1, math.ceil(args.rows / len(tasks)))
    few_per_task = max(1, args.few_rows // len(tasks))
    files, few_files = text_items(work, "items", per_task), text_items(work, "few", few_per_task)
    sampling = SamplingConfig(temperature=0.0, max_tokens=args.max_tokens, seed=0)
    rows = request_rows(files, cfg.repo, sampling)
    few_rows = request_rows(few_files, cfg.repo, sampling)
    n, few = len(rows), len(few_rows)

    load_s, bare_s = bare(cfg, rows, work)
    loads, ours, rays = [load_s], [], []
    for i in range(args.repeats):
        # Interleaved, each in a fresh process, so the machine's drift falls on all three
        # alike; the first run also makes Ray's LLM telemetry actor (~1.5 s), which the later
        # ones find made: the medians leave that one out.
        ours.append(pipeline_s(few_files, cfg, args, work / f"out-few-{i}"))
        rays.append(ray_alone_s(cfg, few_rows, args.batch_size, work))
        if len(loads) < args.repeats:
            loads.append(bare(cfg, [], work)[0])
    all_s = pipeline_s(files, cfg, args, work / "out")
    load_s, few_s, ray_few_s = median(loads), median(ours), median(rays)
    per_row_s = (all_s - few_s) / (n - few)
    fixed_s = few_s - few * per_row_s

    print(
        f"rows: {n} and {few} (text setup, max_tokens {args.max_tokens}, "
        f"batch size {args.batch_size}); model {cfg.repo}; medians of {args.repeats}"
    )
    print(
        "engine load (bare: a fresh process's start, import vllm, vllm.LLM): "
        f"{load_s:.1f} s ({seconds(loads)})"
    )
    print(f"bare vllm.LLM.chat: {bare_s:.1f} s, {1000 * bare_s / n:.2f} ms/row")
    print(f"ray start (once, before every pipeline run): {ray_s:.1f} s")
    print(f"pipeline evaluate --engine vllm, {few} rows: {few_s:.1f} s ({seconds(ours)})")
    print(f"pipeline evaluate --engine vllm, {n} rows: {all_s:.1f} s")
    print(f"  per row (two-point fit): {1000 * per_row_s:.2f} ms; fixed: {fixed_s:.1f} s")
    print(f"fixed cost beyond the bare engine load: {fixed_s - load_s:.1f} s")
    print(f"Ray's processor alone, {few} rows: {ray_few_s:.1f} s ({seconds(rays)})")
    print(
        "  its fixed cost beyond the bare engine load (at the pipeline's per-row cost): "
        f"{ray_few_s - few * per_row_s - load_s:.1f} s; the pipeline adds "
        f"{few_s - ray_few_s:+.1f} s to it"
    )
    print(f"per-row ratio pipeline/bare: {per_row_s / (bare_s / n):.2f}x")
    print(f"load-adjusted ratio bare/pipeline: {(all_s - load_s) / bare_s:.2f}x")
    print("the machine's load changes every figure here: run it on idle cores")


if __name__ == "__main__":  # vLLM spawns its engine core: the guard keeps it from re-running
    main()
