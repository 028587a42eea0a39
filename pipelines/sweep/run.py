"""`sweep`: every model config x setup through `evaluate`, in parallel across the cluster.

Each model is one Ray task (0 CPUs, pinned to the driver's node so it reads and checks the
result tree there) that drives `evaluate(...)`; the engine actors that pipeline creates ask
for their own GPUs, so a model's bundle is its tensor-parallel degree. The driver admits a
model only while the GPUs it has handed out plus the model's fit in what the cluster can
grow to (pipelines.sweep.capacity: `--gpus`, the autoscaler's config, or the GPUs present;
`request_resources` asks the autoscaler for the nodes, and a model waiting for them shows as
"pending: waiting for N GPU(s)"), and at most `--cpu-parallel` CPU-only models at once. A
model's setups run in one call, one after the other, because `evaluate` tidies the model's
whole result directory when it starts.

Resumable at model x setup granularity: a setup whose request keys are all on disk is
skipped; a partial one resumes through evaluate's key skipping. Models that cannot run here
(more GPUs than the cluster can ever have, a tensor-parallel size wider than its largest
node, no API key, no engine for them) are listed as not run and get no result rows.

`--probes [GRID]` also trains the probe grid on each evaluated model's own vision tower
(pipelines/sweep/probes.py, docs/probes.md), after the evaluations, one GPU per trial.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from geometry.item import SETUPS
from geometry.tasks.registry import all_tasks
from pipelines.engines.models.config_yaml import load_configs
from pipelines.engines.models.engine_kinds import BASELINES
from pipelines.engines.models.model_schema import ModelConfig, ModelConfigError
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.engines.stages.gpu_request import GPURequest
from pipelines.engines.stages.options import EngineOptions
from pipelines.noregeo.generate import MANIFEST, parse_list, read_manifest
from pipelines.noregeo.run_settings import EvaluateSettings
from pipelines.noregeo.task_selection import select_tasks
from pipelines.sweep.api_keys import API_KEYS, key_refs, keys_in_environment

# The command line calls the command module's add_arguments (pipelines/cli.py).
from pipelines.sweep.arguments import add_arguments as add_arguments
from pipelines.sweep.capacity import (
    BOOTSTRAP_CONFIG,
    GPUCapacity,
    discover,
    wider_than_any_node,
)
from pipelines.sweep.plan import (
    Job,
    cpu_runnable_reason,
    dry_run_chars,
    plan,
    print_plan,
    prompt_chars,
)
from pipelines.sweep.probes import (
    plan_probes,
    print_probe_plan,
    read_grid,
    run_probes,
)
from pipelines.sweep.progress_table import TAG_ENV, print_progress
from pipelines.sweep.revisions import pin_by_use
from pipelines.sweep.weights import caches_from_yaml, head_volume_from_yaml, print_weights
from store.atomic import write_bytes_atomic
from store.errors import UsageError
from store.storage import Location, children, location

BENCHMARKS = ("noregeo", "geobuild")


def _select_configs(folder: Path, only: str | None) -> list[ModelConfig]:
    try:
        configs = load_configs(folder)
    except ModelConfigError as err:
        raise UsageError(str(err)) from err
    if only is None:
        return [c for c in configs if not c.local]
    names = parse_list(only, [c.name for c in configs], "model names")
    return [c for c in configs if c.name in names]


def _items_state(items: Location, per_task: int) -> tuple[dict[str, Any] | None, list[Location]]:
    if not (items / MANIFEST).is_file():
        return None, []
    manifest = read_manifest(items, keys=("tasks", "setups", "per_task"))
    if manifest["per_task"] < per_task:
        raise UsageError(
            f"--items {items} has {manifest['per_task']} items per task, fewer than --per-task "
            f"{per_task}; give a new --items directory to generate more"
        )
    return manifest, children(items, "part-*.parquet")


def _materialise(cfg: ModelConfig, out: Location) -> ModelConfig:
    """Local entries: repo from their env variable, or a tiny model built offline once
    (under OUT/.models, or with results on a URI, under the system's temporary folder: the
    tiny models are for runs on one machine)."""
    if cfg.repo_env and os.environ.get(cfg.repo_env):
        return cfg.model_copy(update={"repo": os.environ[cfg.repo_env]})
    if cfg.build_tiny:
        from pipelines.engines.models.tiny_model import build_tiny_model

        folder = (
            out / ".models"
            if isinstance(out, Path)
            else Path(tempfile.gettempdir()) / "geosee-models"
        )
        path = (folder / cfg.name).resolve()
        if not (path / "config.json").is_file():
            build_tiny_model(cfg.build_tiny, path)
        return cfg.model_copy(update={"repo": str(path)})
    return cfg


def _check_gpu_node_types(
    configs: list[ModelConfig], capacity: GPUCapacity, cluster_config: Path | None
) -> None:
    """A named cluster config whose node types declare no GPUs cannot run the GPU models
    asked for, nor can any cluster run a model wider than its largest node: usage errors,
    not a sweep that lists them as not run."""
    wanting = [c.name for c in configs if c.gpus and not c.blocked]
    if cluster_config is not None and wanting and capacity.total == 0:
        raise UsageError(
            f"--cluster-config {cluster_config}: no node type declares GPUs (resources: "
            f"{{GPU: N}}), and {len(wanting)} selected model(s) need them ({', '.join(wanting[:3])}"
            f"{', ...' if len(wanting) > 3 else ''})"
        )
    wide = wider_than_any_node(configs, capacity)
    if wide:
        raise UsageError(wide)


def _geobuild_only_reason(cfg: ModelConfig, capacity: GPUCapacity) -> str | None:
    """Why a model cannot run when GeoBuild is the only benchmark (None: it can)."""
    if cfg.engine in BASELINES:
        return "not run: answer baselines have no GeoBuild program"
    return cpu_runnable_reason(cfg, capacity)


def _geobuild_entry() -> tuple[Any, str | None]:
    """GeoBuild's per-model entry `pipelines.geobuild.loop.sweep_model(cfg, out, limit) -> int`."""
    try:
        module = importlib.import_module("pipelines.geobuild.loop")
    except ImportError as err:
        return None, f"GeoBuild not run: pipelines.geobuild.loop is not importable ({err})"
    entry = getattr(module, "sweep_model", None)
    if entry is None:
        return None, "GeoBuild not run: pipelines.geobuild.loop has no sweep_model(cfg, out, limit)"
    return entry, None


def _run_model(
    cfg: dict[str, Any],
    setups: list[str],
    files: list[str],
    tasks: list[str],
    limit: int | None,
    sampling: dict[str, Any],
    opts: dict[str, Any],
    out: str,
    shard_rows: int,
    geobuild: bool,
) -> dict[str, int]:
    """Body of one model's Ray task: wait for its GPUs, then evaluate (and GeoBuild).
    `opts` holds the engine options and, as API_KEYS, the model's API key variable -> an
    ObjectRef of its value (api_keys.key_refs)."""
    opts = dict(opts)
    with keys_in_environment(opts.pop(API_KEYS, {})):
        return _run_model_body(cfg, setups, files, tasks, limit, sampling, opts, out,
                               shard_rows, geobuild)  # fmt: skip


def _run_model_body(
    cfg: dict[str, Any],
    setups: list[str],
    files: list[str],
    tasks: list[str],
    limit: int | None,
    sampling: dict[str, Any],
    opts: dict[str, Any],
    out: str,
    shard_rows: int,
    geobuild: bool,
) -> dict[str, int]:
    import ray

    from pipelines.engines.models.llava_convert import prepare
    from pipelines.engines.stages.gpus import cluster_gpus
    from pipelines.noregeo.evaluate_pipeline import evaluate

    ray.data.DataContext.get_current().enable_progress_bars = False  # the driver shows progress
    model = ModelConfig.model_validate(cfg)
    # An original-layout LLaVA is converted to llava-hf once, on the node that mirrors it.
    model = prepare(model)
    # Every replica's GPUs, as the engine stage's own check counts them: that check then
    # finds them present and leaves the sweep's request to the autoscaler alone.
    need = model.gpus * int(opts.get("pool_size", 1))
    deadline = time.monotonic() + 3600  # autoscaled nodes take minutes, never an hour
    while cluster_gpus() < need:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{model.name}: {need} GPU(s) did not appear in an hour")
        time.sleep(5)
    written = {"noregeo": 0, "geobuild": 0}
    if setups:
        run = EvaluateSettings(
            tasks=tasks,
            setups=setups,
            limit=limit,
            sampling=SamplingConfig(**sampling),
            engine_options=EngineOptions(**opts),
            shard_rows=shard_rows,
        )
        written["noregeo"] = evaluate([location(f) for f in files], model, run, location(out))
        _check_health(model, location(out), run)
    if geobuild and model.engine not in BASELINES:  # answer baselines write no programs
        entry, _ = _geobuild_entry()
        # Every problem: `limit` is NoReGeo's items per task (--per-task), not a count of
        # GeoBuild problems (it once went here as one, and only when the items pre-existed).
        written["geobuild"] = int(entry(model, location(out), None))
    return written


def _check_health(model: ModelConfig, out: Location, run: EvaluateSettings) -> None:
    """A model whose rows are mostly engine errors failed, as `evaluate` says on its own:
    its results are no measurement, and the sweep must not list it as done."""
    from pipelines.noregeo.run_health import run_health
    from pipelines.noregeo.summarize import load_results

    rows = load_results(out, model=model.name)
    health = run_health(rows, model, run.tasks, run.setups, run.limit, run.sampling)
    if health.error_rate > run.max_error_rate:
        raise RuntimeError(health.failure(run.max_error_rate))


@dataclasses.dataclass
class _Running:
    job: Job
    ref: Any
    started: float


def _bundles(jobs: list[Job], replicas: int) -> list[float]:
    """GPUs per engine replica of each GPU model in `jobs`: the autoscaler's bundles."""
    return [float(j.cfg.gpus) for j in jobs if j.cfg.gpus for _ in range(replicas)]


def execute(
    jobs: list[Job],
    args: argparse.Namespace,
    files: list[Location],
    tasks: list[str],
    limit: int | None,
    capacity: GPUCapacity,
    geobuild: bool,
) -> dict[str, str]:
    """Run the runnable jobs; returns model -> final state (done, failed: ..., not run: ...)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    states = {j.cfg.name: (j.reason or ("done" if not j.setups else "pending")) for j in jobs}
    queue = [j for j in jobs if j.runnable or (geobuild and j.reason is None)]
    here = ray.get_runtime_context().get_node_id()
    sampling = SamplingConfig.from_args(args).model_dump()
    opts = {
        "pool_size": args.replicas,
        "batch_size": args.batch_size,
        "baseline_delay_s": args.baseline_delay,
    }
    cpu_parallel = args.cpu_parallel or max(1, int(ray.cluster_resources().get("CPU", 0) // 4))
    gpus = capacity.total
    running: list[_Running] = []
    cache: dict[Location, int] = {}
    last = 0.0
    # The autoscaler's request follows the GPU models running now: made as they start,
    # narrowed as they end, withdrawn when the sweep ends (also when it is interrupted: a
    # standing request keeps its nodes from ever going idle).
    request = GPURequest("sweep")
    try:
        while queue or running:
            used = sum(r.job.cfg.gpus * args.replicas for r in running)
            cpu_jobs = sum(1 for r in running if not r.job.cfg.gpus)
            for job in list(queue):
                need = job.cfg.gpus * args.replicas
                never = capacity.reason_not_runnable(need)
                if never:  # could never be admitted (replicas x TP): say so, never wait forever
                    states[job.cfg.name] = never
                    queue.remove(job)
                    continue
                if (need and used + need > gpus) or (not need and cpu_jobs >= cpu_parallel):
                    continue
                if need:
                    request.set(_bundles([r.job for r in running] + [job], args.replicas))
                cfg = _materialise(job.cfg, args.out)
                task = ray.remote(_run_model).options(
                    num_cpus=0,
                    runtime_env={"env_vars": {TAG_ENV: job.cfg.name}},
                    scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
                )
                ref = task.remote(cfg.model_dump(), job.setups, [str(f) for f in files], tasks,
                                  limit, sampling, {**opts, API_KEYS: key_refs(cfg)},
                                  str(args.out.resolve()), args.shard_rows, geobuild)  # fmt: skip
                running.append(_Running(job, ref, time.monotonic()))
                queue.remove(job)
                states[job.cfg.name] = "running"
                used, cpu_jobs = used + need, cpu_jobs + (0 if need else 1)
            if not running:
                continue
            ready, _ = ray.wait([r.ref for r in running], num_returns=1, timeout=1.0)
            for r in [r for r in running if r.ref in ready]:
                running.remove(r)
                try:
                    ray.get(r.ref)
                    states[r.job.cfg.name] = "done"
                except Exception as err:  # one model's failure never stops the others
                    first = str(err).strip().splitlines()[-1] if str(err).strip() else repr(err)
                    states[r.job.cfg.name] = f"failed: {first[:200]}"
            # Narrowed as GPU models finish, renewed while they run.
            request.set(_bundles([r.job for r in running], args.replicas))
            if time.monotonic() - last >= args.progress_interval or not (queue or running):
                print_progress(jobs, states, args.out, cache)
                last = time.monotonic()
    finally:
        request.clear()
    return states


def _start_ray(out: Location) -> None:
    """Connect (or start local Ray); refuse results on one node's disk of a cluster of
    several nodes, or a store one of its nodes cannot write, before anything is written."""
    from pipelines.engines.session.ray_session import ensure_ray
    from pipelines.engines.stages.node_reach import check_results_store

    ensure_ray()
    check_results_store(out, "sweep")


def run(args: argparse.Namespace) -> int:
    """Plan, generate or reuse items, run what can run here, report the rest."""
    benchmarks = parse_list(args.benchmarks, BENCHMARKS, "benchmarks")
    configs = _select_configs(args.models, args.only)
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file; give a directory")
    items = args.items or args.out / "items"
    if items.exists() and not items.is_dir():
        raise UsageError(f"--items {items} is a file; give a directory")
    manifest, files = _items_state(items, args.per_task)
    # As `evaluate` reads --tasks: from the items there are, or from every task when the
    # sweep generates them (the plan counts rows per task of the manifest).
    tasks = (
        select_tasks(args.tasks, manifest["tasks"], str(items))
        if manifest
        else select_tasks(args.tasks, list(all_tasks()))
    )
    limit = args.per_task if manifest and args.per_task < manifest["per_task"] else None
    sampling = SamplingConfig.from_args(args)
    probe_grid = read_grid(args.probes) if args.probes else None
    # With --gpus or --cluster-config the capacity needs no Ray: every check of the input
    # (the cluster config, the revisions) then runs before Ray starts.
    capacity_first = args.gpus is not None or args.cluster_config is not None
    if not args.dry_run and not capacity_first:
        _start_ray(args.out)
    try:
        capacity = discover(args.gpus, args.cluster_config, connected=not args.dry_run)
    except ValueError as err:
        raise UsageError(f"--cluster-config {err}" if args.cluster_config else str(err)) from err
    _check_gpu_node_types(configs, capacity, args.cluster_config)
    # Hub models that can run here run one commit (pinned by use: pipelines.sweep.revisions).
    runnable = [c for c in configs if cpu_runnable_reason(c, capacity) is None]
    pinned, commits = pin_by_use(
        runnable, args.out, ask_hub=not args.dry_run, keep_recorded=args.keep_recorded_revisions
    )
    by_name = {c.name: c for c in pinned}
    configs = [by_name.get(c.name, c) for c in configs]
    if not args.dry_run and capacity_first:
        _start_ray(args.out)
    print(f"planning for {capacity.total:g} GPU(s) ({capacity.source})", flush=True)
    geobuild_note = None
    if "geobuild" in benchmarks:
        _entry, geobuild_note = _geobuild_entry()
    run_noregeo = "noregeo" in benchmarks
    jobs = (
        plan(
            configs,
            manifest,
            files,
            tasks,
            limit,
            sampling,
            args.out,
            capacity,
            len(tasks) * args.per_task,
        )
        if run_noregeo
        else [  # fmt: skip
            Job(cfg=c, setups=[], reason=_geobuild_only_reason(c, capacity)) for c in configs
        ]
    )
    if args.dry_run:
        chars = prompt_chars(files) if files else dry_run_chars(tasks, args.item_seed)
        where = f"in {items}" if manifest else "not generated yet"
        print(f"dry run: {len(jobs)} models, items {where}")
        print_plan(jobs, chars)
        launcher = args.cluster_config or (BOOTSTRAP_CONFIG if capacity_first is False else None)
        print_weights(
            [j.cfg for j in jobs if j.runnable],
            caches_from_yaml(launcher),
            args.out,
            head_bytes=head_volume_from_yaml(launcher),
        )
        if probe_grid is not None:
            print_probe_plan(plan_probes(probe_grid, configs, args.out, capacity), args.probes)
        if geobuild_note:
            print(geobuild_note)
        return 0
    if run_noregeo and manifest is None:
        from pipelines.noregeo.generate import generate

        print(f"generating items into {items} ({args.per_task} per task)", flush=True)
        manifest = generate(
            items, tasks, args.per_task, args.item_seed, list(SETUPS), args.image_size
        )
        files = children(items, "part-*.parquet")
        jobs = plan(configs, manifest, files, tasks, None, sampling, args.out, capacity, 0)
    geobuild = "geobuild" in benchmarks and geobuild_note is None
    states = execute(jobs, args, files, tasks, limit, capacity, geobuild)
    if probe_grid is not None:
        probe_jobs = plan_probes(probe_grid, configs, args.out, capacity)
        states.update(run_probes(probe_jobs, args.probes, Path(args.out)))
    _report(states, args.out, geobuild_note, commits)
    return 1 if any(s.startswith("failed") for s in states.values()) else 0


def _report(
    states: dict[str, str], out: Location, geobuild_note: str | None, commits: dict[str, str]
) -> None:
    ran = sorted(n for n, s in states.items() if s == "done")
    print(f"\nsweep: {len(ran)} model(s) done")
    for name, state in sorted(states.items()):
        if state != "done":
            print(f"  {name}: {state}")
    if geobuild_note:
        print(geobuild_note)
    record = {"states": states, "geobuild": geobuild_note, "argv": sys.argv, "revisions": commits}
    payload = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()
    write_bytes_atomic(out / "sweep" / "status.json", payload)
