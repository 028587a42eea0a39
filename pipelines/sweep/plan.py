"""The sweep's plan: which model runs which setups, what is already done, what it will cost.

Pure decisions over configs, the item table and the result tree; nothing here starts Ray or
writes a file, so `sweep --dry-run` can print the plan on any machine.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from geometry.item import IMAGE_SETUPS, SETUPS
from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.engines.models.model_fields import OUTPUT_TOKENS_PER_ROW
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.requests import SamplingConfig, add_requests
from pipelines.sweep.capacity import GPUCapacity
from store.records import model_dir
from store.shards import quarantine, read_shards, shard_files
from store.storage import Location, parquet_file, read_table

BENCHMARK = "noregeo"

# Estimate assumptions, printed with every dry run.
A100_BF16_FLOPS = 312e12  # dense bf16 peak of one A100
MFU = 0.4  # share of peak a batched vLLM prefill reaches
CHARS_PER_TOKEN = 4.0  # English prose with coordinates, BPE tokenizers
LOAD_HOURS = 5 / 60  # engine start (weights from local disk, CUDA graphs) per model
ASSUMPTIONS = (
    f"tokens/row = (system+prompt chars)/{CHARS_PER_TOKEN:g} + the model's image_tokens on "
    f"image setups + the model's expected_output_tokens (default {OUTPUT_TOKENS_PER_ROW}; "
    f"a reasoning model's: its thinking budget + the answer); A100 80GB at {MFU:.0%} MFU of "
    f"{A100_BF16_FLOPS / 1e12:g} TFLOPs, 2*params FLOPs per token (output tokens counted at "
    f"the prefill rate, so decode-bound small models are underestimated); "
    f"{LOAD_HOURS * 60:g} min engine start x TP per model"
)


@dataclass
class Job:
    """One model of the sweep: the setups it still has to run, or why it cannot run here."""

    cfg: ModelConfig
    setups: list[str]
    done_setups: list[str] = field(default_factory=list)
    reason: str | None = None  # set: listed as "not run", never evaluated
    rows: dict[str, int] = field(default_factory=dict)  # expected rows per setup

    @property
    def runnable(self) -> bool:
        """Whether the job has setups left to evaluate and nothing stops it."""
        return self.reason is None and bool(self.setups)


def cpu_runnable_reason(cfg: ModelConfig, capacity: GPUCapacity) -> str | None:
    """Why `cfg` can never run on a cluster of this capacity, or None when it can (perhaps
    once the autoscaler has added its GPUs)."""
    if cfg.blocked:
        return f"not run: {cfg.blocked}"
    if cfg.engine in BASELINES or cfg.local:
        return None
    if cfg.engine == "http":
        if not os.environ.get(cfg.api_key_env or ""):
            return f"not run: ${cfg.api_key_env} is not set"
        return None
    return capacity.reason_not_runnable(cfg.gpus)


def setup_rows(manifest: dict[str, Any], tasks: list[str], setup: str, limit: int | None) -> int:
    """Rows `evaluate` produces for one setup: per task, min(count, limit)."""
    counts = manifest["counts"]
    return sum(min(int(counts[t][setup]), limit or 10**9) for t in tasks if setup in counts[t])


def rows_on_disk(
    out: Location, name: str, setup: str, cache: dict[Location, int] | None = None
) -> int:
    """Result rows written for one model x setup (Parquet footers only; shards are
    immutable, named by their keys' hash, so a cache keyed by path stays right)."""
    total = 0
    folder = model_dir(out, BENCHMARK, name) / f"setup={setup}"
    for shard in shard_files(folder) if folder.exists() else []:
        if cache is not None and shard in cache:
            total += cache[shard]
            continue
        try:
            with parquet_file(shard) as f:
                n = f.metadata.num_rows
        except FileNotFoundError:  # replaced between listing and reading: counted next time
            continue
        except (pa.ArrowException, OSError, ValueError) as err:  # as every shard reader does
            quarantine(shard, folder, str(err).splitlines()[0] if str(err) else type(err).__name__)
            continue
        if cache is not None:
            cache[shard] = n
        total += n
    return total


def keys_on_disk(out: Location, name: str, setup: str) -> set[str]:
    """Request keys written for one model x setup (unreadable shards quarantined, as every
    reader does); unlike `finished_keys`, never sweeps temporaries, because another job may
    be writing them right now."""
    rows = read_shards(model_dir(out, BENCHMARK, name) / f"setup={setup}", ["request_key"])
    return set() if rows is None else {str(k) for k in rows["request_key"].to_list()}


def expected_keys(
    files: list[Location],
    cfg: ModelConfig,
    tasks: list[str],
    setup: str,
    limit: int | None,
    sampling: SamplingConfig,
) -> set[str]:
    """The request keys `evaluate` would write for one model x setup."""
    from pipelines.noregeo.evaluate_pipeline import item_reader

    read = item_reader(tasks, [setup], limit)  # the very filter evaluate applies
    keys: set[str] = set()
    for path in files:
        table = read({"path": np.array([str(path)])})
        if table.num_rows:
            with_keys = add_requests(table, cfg.repo, cfg.revision, sampling.for_model(cfg))
            keys.update(str(k) for k in with_keys.column("request_key").to_pylist())
    return keys


def finished(
    out: Location,
    files: list[Location],
    cfg: ModelConfig,
    tasks: list[str],
    setup: str,
    limit: int | None,
    sampling: SamplingConfig,
    rows: int,
) -> bool:
    """A model x setup is finished when every request key it would write is on disk."""
    if rows_on_disk(out, cfg.name, setup) < rows:  # cheap test first: keys only if it can pass
        return False
    return expected_keys(files, cfg, tasks, setup, limit, sampling) <= keys_on_disk(
        out, cfg.name, setup
    )


def plan(
    configs: list[ModelConfig],
    manifest: dict[str, Any] | None,
    files: list[Location],
    tasks: list[str],
    limit: int | None,
    sampling: SamplingConfig,
    out: Location,
    capacity: GPUCapacity,
    default_rows: int,
) -> list[Job]:
    """One Job per config; finished setups are moved to `done_setups`.

    Without an item table yet (a dry run before `generate`), every setup counts
    `default_rows` rows and nothing is finished.
    """
    jobs = []
    for cfg in configs:
        job = Job(cfg=cfg, setups=[], reason=cpu_runnable_reason(cfg, capacity))
        for setup in cfg.setups:
            if manifest is not None and setup not in manifest["setups"]:
                continue  # the item table was generated without this setup
            rows = setup_rows(manifest, tasks, setup, limit) if manifest else default_rows
            job.rows[setup] = rows
            if manifest is not None and finished(
                out, files, cfg, tasks, setup, limit, sampling, rows
            ):
                job.done_setups.append(setup)
            else:
                job.setups.append(setup)
        jobs.append(job)
    return jobs


def prompt_chars(
    files: list[Location], per_setup: dict[str, float] | None = None
) -> dict[str, float]:
    """Mean system+prompt characters per setup in the item table (or the given fallback)."""
    if not files:
        return per_setup or {}
    sums: dict[str, list[float]] = {}
    for path in files:
        t = read_table(path, ["setup", "system_prompt", "prompt"]).to_pydict()
        for setup, system, prompt in zip(t["setup"], t["system_prompt"], t["prompt"], strict=True):
            sums.setdefault(setup, []).append(len(system or "") + len(prompt or ""))
    return {s: float(np.mean(v)) for s, v in sums.items()}


@dataclass(frozen=True)
class Estimate:
    """Cost of one job: rows, tokens, GPU-hours (0 for CPU and API engines)."""

    rows: int
    tokens: float
    gpu_hours: float


def estimate(job: Job, chars: dict[str, float]) -> Estimate:
    """Tokens and GPU-hours of the setups a job still has to run (see ASSUMPTIONS)."""
    cfg = job.cfg
    rows = tokens = 0.0
    for setup in job.setups:
        n = job.rows.get(setup, 0)
        per_row = chars.get(setup, 0.0) / CHARS_PER_TOKEN + cfg.expected_output_tokens
        if setup in IMAGE_SETUPS:
            per_row += cfg.image_tokens
        rows += n
        tokens += n * per_row
    hours = 0.0
    if cfg.gpus and cfg.params_b and job.setups:
        tokens_per_gpu_s = MFU * A100_BF16_FLOPS / (2 * cfg.params_b * 1e9)
        hours = tokens / tokens_per_gpu_s / 3600 + LOAD_HOURS * cfg.gpus
    return Estimate(rows=int(rows), tokens=tokens, gpu_hours=hours)


def dry_run_chars(tasks: list[str], seed: int) -> dict[str, float]:
    """Prompt lengths from one in-memory item per task (no images, nothing written)."""
    from geometry.items import build_items

    chars: dict[str, list[int]] = {}
    for task in tasks:
        for item in build_items(task, 1, seed, SETUPS, 64, None):
            chars.setdefault(item.setup, []).append(len(item.system_prompt) + len(item.prompt))
    return {s: sum(v) / len(v) for s, v in chars.items()}


def print_plan(jobs: list[Job], chars: dict[str, float], out: Any = None) -> None:
    """The dry-run table: per model what runs, rows, tokens, GPU-hours; totals last."""
    out = out or sys.stdout
    rows = tokens = hours = 0.0
    print(f"{'model':34} {'engine':8} {'tp':>3} {'setups':18} {'rows':>7} {'Mtok':>7} "
          f"{'GPU-h':>7}  state", file=out)  # fmt: skip
    for job in jobs:
        est = estimate(job, chars)
        state = job.reason or ("done" if not job.setups else "will run")
        if job.done_setups:
            state += f" (done: {','.join(job.done_setups)})"
        if job.reason is None:
            rows, tokens, hours = rows + est.rows, tokens + est.tokens, hours + est.gpu_hours
        print(f"{job.cfg.name[:34]:34} {job.cfg.engine:8} {job.cfg.tensor_parallel_size:>3} "
              f"{','.join(job.setups)[:18]:18} {est.rows:>7} {est.tokens / 1e6:>7.2f} "
              f"{est.gpu_hours:>7.2f}  {state}", file=out)  # fmt: skip
    print(f"total (models that run here): {int(rows)} rows, {tokens / 1e6:.1f} M tokens, "
          f"{hours:.1f} A100-hours", file=out)  # fmt: skip
    print(f"assumptions: {ASSUMPTIONS}", file=out)
