"""Evaluate pipeline benchmark: engine busy fraction and pipeline overhead, side by side.

1. A synthetic engine (the oracle sleeping a fixed time per batch) in a 2-actor pool over the
   default benchmark's 7,500 rows: busy fraction = engine time / (wall time x pool size).
   Target: at least 0.9.
2. The whole pipeline with the plain oracle against a plain in-process loop doing the same
   request building, parsing, scoring and Parquet writing. Target: within 3x.

Usage: python bench/evaluate.py [--items DIR] [--delay 1.0] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from actors.baselines import OracleEngine
from geometry.item import SETUPS
from geometry.tasks.registry import all_tasks
from pipelines.engines.models.model_resolution import resolve_model
from pipelines.engines.prompts.requests import SamplingConfig, add_requests
from pipelines.engines.session.ray_session import ensure_ray
from pipelines.engines.stages.engine_stages import oracle_actor_stage
from pipelines.engines.stages.options import EngineOptions
from pipelines.noregeo.evaluate_pipeline import evaluate
from pipelines.noregeo.generate import generate
from pipelines.noregeo.results import ShardWriter
from pipelines.noregeo.run_settings import EvaluateSettings
from pipelines.noregeo.scoring import parse_and_score
from pipelines.noregeo.summarize import load_results


def plain_loop(files: list[Path], out: Path) -> int:
    """The same steps as the pipeline, in one process, without Ray."""
    oracle = OracleEngine()
    writer = ShardWriter(str(out), "oracle", "none", "oracle")
    rows = 0
    for f in files:
        table = pq.read_table(f)
        for chunk in table.to_batches(max_chunksize=256):
            batch = add_requests(pa.Table.from_batches([chunk]), "oracle", "none", SamplingConfig())
            writer(parse_and_score(oracle(batch)))  # no Ray step: types as the engine made them
            rows += batch.num_rows
    return rows


def main() -> None:
    """Run both measurements and print them against their targets."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=Path, default=None, help="item dir (default: generate one)")
    parser.add_argument("--delay", type=float, default=1.0, help="synthetic seconds per batch")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    ensure_ray()
    tmp = Path(tempfile.mkdtemp(prefix="bench-evaluate-"))
    items = args.items
    if items is None:
        items = tmp / "items"
        generate(items, list(all_tasks()), 100, 0, list(SETUPS), 448)
    files = sorted(items.glob("part-*.parquet"))
    cfg = resolve_model("oracle", "oracle")
    tasks = list(all_tasks())

    pool = 2
    opts = EngineOptions(pool_size=pool, batch_size=args.batch_size, baseline_delay_s=args.delay)
    started = time.perf_counter()
    synthetic = tmp / "synthetic"
    synthetic_run = EvaluateSettings(tasks=tasks, setups=list(SETUPS), engine_options=opts)
    rows = evaluate(files, cfg, synthetic_run, synthetic, engine_stage=oracle_actor_stage)
    wall = time.perf_counter() - started
    engine_time = float(load_results(synthetic, model="oracle")["time_taken_llm"].sum())
    busy = engine_time / (wall * pool)
    print(f"synthetic engine: {rows} rows, {pool} actors, {args.delay}s per batch")
    print(f"  batches of {args.batch_size}: wall {wall:.1f}s, engine time {engine_time:.1f}s")
    print(f"  busy fraction {busy:.3f} (target >= 0.9)")

    # A run's first use of task workers pays for starting and importing them; a sweep runs
    # many models in one Ray session, so the best of two later runs is printed beside it.
    times = []
    plain_opts = EngineOptions(batch_size=256)
    plain_run = EvaluateSettings(tasks=tasks, setups=list(SETUPS), engine_options=plain_opts)
    for attempt in range(3):
        started = time.perf_counter()
        rows = evaluate(files, cfg, plain_run, tmp / f"oracle{attempt}")
        times.append(time.perf_counter() - started)
    pipeline_s = min(times[1:])
    started = time.perf_counter()
    loop_rows = plain_loop(files, tmp / "loop")
    loop_s = time.perf_counter() - started
    assert loop_rows == rows, (loop_rows, rows)
    print(
        f"oracle pipeline: {rows} rows, first {times[0]:.2f}s, best of two more {pipeline_s:.2f}s "
        f"= {rows / pipeline_s:.0f} rows/s"
    )
    print(f"plain loop:      {loop_rows} rows in {loop_s:.2f}s = {loop_rows / loop_s:.0f} rows/s")
    print(
        f"  pipeline / loop wall ratio: best {pipeline_s / loop_s:.2f} (target <= 3), "
        f"first {times[0] / loop_s:.2f}"
    )


if __name__ == "__main__":
    main()
