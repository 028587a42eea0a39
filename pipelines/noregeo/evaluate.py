"""`evaluate`: items -> request rows -> engine -> parse and score -> Parquet shards.

A lazy Ray Data pipeline; nothing is materialised before the shard writer. Finished request
keys are skipped, so a killed run started again completes the same result set.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from geometry.item import IMAGE_SETUPS, SETUPS
from pipelines.command_line.args import (
    any_location,
    output_location,
    per_task_int,
    positive_int,
    replicas_int,
    seconds_float,
    share,
)
from pipelines.engines.engine_kinds import BASELINES, CHECKPOINT_ENGINES, ENGINES
from pipelines.engines.model_resolution import add_model_arguments, config_engine, resolve_model
from pipelines.engines.model_schema import ModelConfig, ModelConfigError
from pipelines.engines.placement_groups import removed_when_done
from pipelines.engines.preflight import PreflightError, check_model
from pipelines.engines.prompt_canary import CanaryError
from pipelines.engines.requests import (
    ITEM_COLUMNS_NEEDED,
    SamplingConfig,
    add_requests,
    add_sampling_arguments,
    build_messages,
)
from pipelines.engines.stages import (
    BASELINE_STAGES,
    LIGHT_CPUS,
    STAGES,
    EngineOptions,
    EngineStage,
    MissingKeyError,
    NoGPUError,
    api_key,
    check_gpus,
)
from pipelines.noregeo.baseline_step import AnswerScoreWrite, baseline_engine, score_block
from pipelines.noregeo.folder_settings import (
    ITEM_PREFIX,
    check_folder_settings,
    grammar_hashes,
    settings,
)
from pipelines.noregeo.generate import (
    MANIFEST,
    SHARD_GLOB,
    check_item_shards,
    parse_list,
    read_manifest,
)
from pipelines.noregeo.results import ShardWriter
from pipelines.noregeo.run_health import run_health
from pipelines.noregeo.run_settings import (
    EXPECTED,
    EvaluateSettings,
    expected_rows,
)
from pipelines.noregeo.sample_log import check_sample_dir, write_sample_logs
from pipelines.noregeo.task_selection import TASKS_HELP, select_tasks
from pipelines.terminal.interrupt import keep_on_exit, on_interrupt, saved_rows
from pipelines.terminal.progress import Progress
from store.errors import UsageError
from store.held_rows import KEEP_WAIT_S, HeldRows
from store.records import RETRY_ERRORS, finished_keys, model_dir, model_slug, write_run_record
from store.run_lock import RunLock
from store.settings import write_settings
from store.storage import Location, children, location, read_table

log = logging.getLogger(__name__)

BENCHMARK = "noregeo"
# Prompts the pre-flight check renders per setup kind (text, image): the longest by
# characters, since token counts follow characters closely but not exactly.
PREFLIGHT_PROMPTS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `evaluate` command's options (defaults: EvaluateSettings and SamplingConfig)."""
    # Not checked here: run() checks it, after --max-error-rate, whatever the argv order.
    parser.add_argument(
        "--items", required=True, type=any_location, help="item dir (or URI) from `generate`"
    )
    parser.add_argument(
        "--engine",
        default=None,
        choices=ENGINES,
        help="what answers; default: the engine the model config names (required for a "
        "checkpoint folder, hub id or baseline)",
    )
    add_model_arguments(parser, "config name/path, checkpoint dir, hub id, or (baselines) name")
    parser.add_argument("--setups", default=None, help="comma-separated; default: the model's")
    parser.add_argument("--tasks", default="all", help=TASKS_HELP)
    parser.add_argument(
        "--per-task", type=per_task_int,
        help="items per task: the first N of each task (default: every item the table has)",
    )  # fmt: skip
    add_sampling_arguments(parser)
    parser.add_argument("--pool-size", type=replicas_int, default=1, help="engine replicas")
    parser.add_argument("--batch-size", type=positive_int, default=16, help="rows per engine call")
    parser.add_argument(
        "--baseline-delay",
        type=seconds_float,
        default=0.0,
        help="seconds a baseline engine sleeps per batch, to stand in for model latency",
    )
    parser.add_argument(
        "--shard-rows",
        type=positive_int,
        default=EvaluateSettings.model_fields["shard_rows"].default,
        help="rows per result shard: what a killed run can lose at most, per writer",
    )
    parser.add_argument(
        "--max-error-rate",
        type=share,
        default=EvaluateSettings.model_fields["max_error_rate"].default,
        help="exit 1 when more than this share (0..1) of the run's rows are engine errors",
    )
    parser.add_argument(
        "--retry-errors",
        choices=RETRY_ERRORS,
        default=EvaluateSettings.model_fields["retry_errors"].default,
        help="which rows stored with an engine error a rerun sends again: transient (429, "
        "5xx, timeouts, connection errors), all, or none",
    )
    parser.add_argument(
        "--log-samples",
        type=Path,
        default=None,
        metavar="DIR",
        help="also write every row of the model as JSON lines (prompt, output, parsed answer, "
        "gold, verdict) to DIR/<model>/<setup>.jsonl",
    )
    parser.add_argument(
        "--out", required=True, type=output_location, metavar="RESULTS",
        help="results root or URI (s3://...); rows go under RESULTS/noregeo",
    )  # fmt: skip


def _item_files(items: Location) -> list[Location]:
    if not items.is_dir():
        raise UsageError(f"--items {items} is not a directory; create one with `generate`")
    files = children(items, SHARD_GLOB)
    if not files or not (items / MANIFEST).is_file():
        raise UsageError(f"--items {items} holds no item table (no {MANIFEST}); run `generate`")
    return files


def _in_run(table: pa.Table, tasks: list[str], setups: list[str], limit: int | None) -> pa.Table:
    """The rows of `table` (items or results) that a run of these tasks/setups/limit covers."""
    keep = pc.and_(
        pc.is_in(table["task"], pa.array(tasks)), pc.is_in(table["setup"], pa.array(setups))
    )
    if limit is not None:
        index = [int(i.rsplit("-", 1)[1]) for i in table["item_id"].to_pylist()]
        keep = pc.and_(keep, pa.array([i < limit for i in index], pa.bool_()))
    return table.filter(keep)


def item_reader(tasks: list[str], setups: list[str], limit: int | None) -> Any:
    """Ray Data step: an item shard path in, its rows of the chosen tasks/setups out.

    Reading by our own step (not `read_parquet`) keeps its CPU request fractional.
    """

    def read(batch: dict[str, np.ndarray]) -> pa.Table:
        tables = [read_table(location(str(path))) for path in batch["path"]]
        return _in_run(pa.concat_tables(tables), tasks, setups, limit)

    return read


def longest_prompts(
    files: list[Location], tasks: list[str], setups: list[str], limit: int | None, text_only: bool
) -> list[list[dict[str, Any]]]:
    """The messages of the run's longest requests, text and image setups apart, shaped as
    the engine gets them, for the pre-flight context check. Images are read only for the
    chosen rows."""
    columns = ["item_id", "task", "setup", "system_prompt", "prompt"]
    found: list[tuple[int, Location, dict[str, Any]]] = []
    for path in files:
        for row in _in_run(read_table(path, columns), tasks, setups, limit).to_pylist():
            found.append((len(row["system_prompt"]) + len(row["prompt"]), path, row))
    prompts = []
    for with_image in (False, True):
        kind = [f for f in found if (f[2]["setup"] in IMAGE_SETUPS) == with_image]
        for _, path, row in sorted(kind, key=lambda f: -f[0])[:PREFLIGHT_PROMPTS]:
            image = _item_image(path, row["item_id"], row["setup"]) if with_image else None
            prompts.append(build_messages(row["system_prompt"], row["prompt"], image, text_only))
    return prompts


def _item_image(path: Location, item_id: str, setup: str) -> bytes | None:
    table = read_table(path, ["item_id", "setup", "image"])
    mask = pc.and_(pc.equal(table["item_id"], item_id), pc.equal(table["setup"], setup))
    images = table.filter(mask)["image"].to_pylist()
    return images[0] if images else None


def _drop_done(done: frozenset[str]) -> Any:
    def drop(batch: pa.Table) -> pa.Table:
        keep = [k not in done for k in batch.column("request_key").to_pylist()]
        return batch.filter(pa.array(keep, pa.bool_()))

    return drop


def _check_rate(value: float) -> float:
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise UsageError(f"--max-error-rate must be a share from 0 to 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run `evaluate` with parsed options; exit 1 when too many rows are engine errors."""
    max_error_rate = _check_rate(args.max_error_rate)
    if args.log_samples is not None:  # a flag's own check, before any input is read
        check_sample_dir(args.log_samples)
    files = _item_files(args.items)
    manifest = read_manifest(args.items)
    tasks = select_tasks(args.tasks, manifest["tasks"], str(args.items))
    try:
        engine = args.engine or config_engine(args.model)
        cfg = resolve_model(engine, args.model, args.revision, args.trust_remote_code)
        if args.setups:
            setups = parse_list(args.setups, SETUPS, "setups")
        else:  # the model's own setups, as far as the item table has them
            setups = [str(s) for s in cfg.setups if s in manifest["setups"]] or list(cfg.setups)
        cfg.check_setups(setups)
    except ModelConfigError as err:
        raise UsageError(str(err)) from err
    check_item_shards(files, manifest, tasks, ("task", *ITEM_COLUMNS_NEEDED))
    missing = [s for s in setups if s not in manifest["setups"]]
    if missing:
        raise UsageError(
            f"setups {','.join(missing)} are not in {args.items}; "
            f"it has {','.join(manifest['setups'])}"
        )
    if args.per_task is not None and args.per_task < 1:
        raise UsageError(f"--per-task must be at least 1, got {args.per_task}")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file; give a directory")
    run_settings = EvaluateSettings(
        tasks=tasks,
        setups=setups,
        limit=args.per_task,
        sampling=SamplingConfig.from_args(args),
        engine_options=EngineOptions(
            pool_size=args.pool_size,
            batch_size=args.batch_size,
            baseline_delay_s=args.baseline_delay,
        ),
        shard_rows=args.shard_rows,
        retry_errors=args.retry_errors,
        max_error_rate=max_error_rate,
    )
    if cfg.api_key_env:
        try:
            api_key(cfg)  # refused here, before Ray starts; the http stage reads it again
        except MissingKeyError as err:
            raise UsageError(str(err)) from err
    context = None
    if cfg.engine in CHECKPOINT_ENGINES:
        wanted = [f for f in files if f.stem.removeprefix("part-") in tasks]
        prompts = longest_prompts(wanted, tasks, setups, args.per_task, cfg.modality == "text")
        try:
            max_tokens = run_settings.sampling.max_tokens
            context = check_model(cfg, prompts).record(cfg.engine, max_tokens)
        except PreflightError as err:
            raise UsageError(str(err)) from err
    on_interrupt(saved_rows(model_dir(args.out, BENCHMARK, cfg.name)))
    try:
        written = evaluate(files, cfg, run_settings, args.out, context=context)
    except (NoGPUError, MissingKeyError, CanaryError) as err:
        raise UsageError(str(err)) from err
    from pipelines.noregeo.results_json import write_results_json
    from pipelines.noregeo.summarize import HEADLINE, load_results, summary_tables
    from pipelines.terminal.output import print_tables

    results = load_results(args.out, model=cfg.name)
    root = model_dir(args.out, BENCHMARK, cfg.name)
    written_json = write_results_json(args.out, cfg.name, results, args.items)
    health = run_health(results, cfg, tasks, setups, args.per_task, run_settings.sampling)
    if written:
        print(f"{written} new rows in {root}")
        print_tables({n: t for n, t in summary_tables(results).items() if n in HEADLINE})
        print(f"wrote {written_json}")
    else:  # evaluate() found every request of the run done, and started no Ray
        print(
            f"nothing to do: 0 new rows; {results.height} rows already in {root} "
            f"(`geosee summarize {args.out}` shows their tables)"
        )
    if args.log_samples is not None:
        logged = write_sample_logs(results, cfg.name, args.log_samples)
        print(f"wrote {len(logged)} sample log(s) in {args.log_samples / model_slug(cfg.name)}")
    print(health.line())
    hint = health.retry_hint()
    if hint is not None:
        print(hint)
    if health.error_rate > max_error_rate:
        log.error(health.failure(max_error_rate))
        return 1
    return 0


def evaluate(
    files: Sequence[Location],
    cfg: ModelConfig,
    run: EvaluateSettings,
    out: Location,
    engine_stage: EngineStage | None = None,
    context: dict[str, Any] | None = None,
) -> int:
    """Run the pipeline; returns the number of rows written by this call.

    `context` is the pre-flight context check's record (`preflight.ContextReport.record`),
    kept in the run record: the context length and how max_tokens is clamped to it.
    """
    root = model_dir(out, BENCHMARK, cfg.name)
    # The model's own sampling (its authors' advice, its thinking budget), recorded as asked.
    run = run.model_copy(update={"sampling": run.sampling.for_model(cfg)})
    # The lock comes before the finished-keys scan: once it is held, no other run (nor a
    # late writer of a dead one) adds rows, so the scan stays true for the whole run.
    with RunLock(root) as lock:
        items = files[0].parent if files else None
        manifest = (
            read_manifest(items, keys=("counts",))
            if items is not None and (items / MANIFEST).is_file()
            else None
        )
        ours = settings(cfg, run.sampling, manifest)
        if check_folder_settings(root, ours):
            write_settings(root, ours)  # rebuilt: the records agree with ours, checked above
        done = frozenset(finished_keys(root, retry=run.retry_errors))
        expected = (
            expected_rows(manifest, run.tasks, run.setups, run.limit)
            if manifest is not None
            else None
        )
        record = {
            "benchmark": BENCHMARK,
            "model": cfg.model_dump(),
            **run.model_dump(mode="json"),
            "grammar_sha256": grammar_hashes(),
            "items": {k: v for k, v in ours.items() if k.startswith(ITEM_PREFIX)},
            "rows_already_done": len(done),
            "context": context,
            "argv": sys.argv,
            EXPECTED: expected,
        }
        if not _anything_pending(files, cfg, run, done, expected):
            # A finished run started again: no Ray (15-30 s of start-up) for nothing. The
            # record is still written: it holds this run's settings and expectations.
            write_run_record(root, record)
            return 0
        from pipelines.engines.ray_session import ensure_ray

        ensure_ray()
        run = _with_node_sources(cfg, run, out)
        if cfg.engine == "vllm":
            # A cluster that can never hold the engine refuses at once (exit 2); then the
            # canary, before any row and before the engine loads.
            check_gpus(cfg, replicas=run.engine_options.pool_size)
            record["prompt_canary"] = _prompt_canary(files, cfg, run)
        writer = ShardWriter(
            str(root.resolve()), cfg.name, cfg.revision, cfg.engine, token=lock.token
        )
        ds = _pipeline(files, cfg, run, done, engine_stage, writer)
        # Only now, with every check passed: a refused start leaves no settings behind.
        write_settings(root, ours)
        write_run_record(root, record)
        # The finished keys may belong to other tasks or setups: then the total is unknown.
        pending = sum(expected.values()) - len(done) if expected is not None else 0
        shown = Progress(pending if pending > 0 else None, f"evaluate {cfg.name}", "row")
        # A baseline's step writes its shards itself; an engine's scored rows come here.
        held = None if _writes_in_step(cfg, engine_stage) else HeldRows(writer, run.shard_rows)
        if held is not None:
            keep_on_exit(lambda: held.flush(wait_s=KEEP_WAIT_S))
        written = 0
        # Tensor-parallel engines' placement groups go with the model's dataset.
        with removed_when_done():
            try:
                # No prefetch: with Ray's default of 1 the driver got a block only once the
                # next was ready too (measured: an engine's first block at 20 s, not 12 s).
                blocks = ds.iter_batches(
                    batch_size=None, batch_format="pyarrow", prefetch_batches=0
                )
                for batch in blocks:
                    if held is None:
                        rows = int(pc.sum(batch["rows"]).as_py() or 0)
                        written += rows
                    else:
                        rows = batch.num_rows
                        written += held.add(batch.to_pylist())
                    shown.update(rows)
            finally:
                # However the run ends (done, an error, Ctrl-C), what was answered is kept.
                if held is not None:
                    written += held.flush()
                    keep_on_exit(None)
        shown.close()
        return written


def _with_node_sources(cfg: ModelConfig, run: EvaluateSettings, out: Location) -> EvaluateSettings:
    """On a cluster of several nodes: results that every node reaches (else UsageError), and
    a vllm or hf engine's files mirrored there for its nodes (pipelines.engines.node_sources)."""
    from pipelines.engines.node_sources import check_shared_results, node_sources

    check_shared_results(out, "evaluate")
    if cfg.engine not in ("vllm", "hf"):
        return run
    sources = node_sources(cfg, out)
    if sources is None:
        return run
    opts = dataclasses.replace(run.engine_options, sources=sources)
    return run.model_copy(update={"engine_options": opts})


def _prompt_canary(
    files: Sequence[Location], cfg: ModelConfig, run: EvaluateSettings
) -> dict[str, Any]:
    """The prompt canary (pipelines.engines.prompt_canary) on the run's own requests: per
    setup, the first row of each task file until CANARY_ROWS, so the rows ask different
    tasks (answer formats). CanaryError, one line, when the rendered prompt fails a check."""
    from pipelines.engines.prompt_canary import CANARY_ROWS, check_model_prompts

    rows: list[dict[str, Any]] = []
    wanted = dict.fromkeys(run.setups, CANARY_ROWS)
    for path in files:
        if not any(wanted.values()):
            break
        if path.stem.removeprefix("part-") not in run.tasks:
            continue
        table = _in_run(
            read_table(path, ["task", *ITEM_COLUMNS_NEEDED]), run.tasks, run.setups, run.limit
        )
        for setup, left in wanted.items():
            first = table.filter(pc.equal(table["setup"], setup)).slice(0, 1 if left else 0)
            requests = add_requests(
                first, cfg.repo, cfg.revision, run.sampling, text_only=cfg.modality == "text"
            )
            rows += requests.to_pylist()
            wanted[setup] = left - requests.num_rows
    return check_model_prompts(cfg, run.engine_options, rows)


def _anything_pending(
    files: Sequence[Location],
    cfg: ModelConfig,
    run: EvaluateSettings,
    done: frozenset[str],
    expected: dict[str, int] | None,
) -> bool:
    """Whether any request of the run is not in `done`, found without Ray.

    Fewer finished keys than the run's rows settles it at once (a fresh or partial run);
    otherwise the run's request keys are computed here, as the pipeline would, and looked
    up: the finished keys may belong to other tasks, setups or item tables."""
    if expected is not None and len(done) < sum(expected.values()):
        return True
    for path in files:
        if path.stem.removeprefix("part-") not in run.tasks:
            continue
        rows = _in_run(
            read_table(path, ["task", *ITEM_COLUMNS_NEEDED]), run.tasks, run.setups, run.limit
        )
        requests = add_requests(rows, cfg.repo, cfg.revision, run.sampling, with_messages=False)
        if any(key not in done for key in requests["request_key"].to_pylist()):
            return True
    return False


def _pipeline(
    files: Sequence[Location],
    cfg: ModelConfig,
    run: EvaluateSettings,
    done: frozenset[str],
    engine_stage: EngineStage | None,
    writer: ShardWriter,
) -> Any:
    """The lazy dataset: items -> requests (less the `done` keys) -> engine -> score ->
    shards. Building the engine stage refuses (no GPUs for vllm, no API key) here, before
    anything is written."""
    import ray

    wanted = [f for f in files if f.stem.removeprefix("part-") in run.tasks]
    paths = ray.data.from_items([{"path": str(f)} for f in wanted], override_num_blocks=len(wanted))
    light: dict[str, Any] = {"num_cpus": LIGHT_CPUS, "batch_format": "pyarrow"}
    ds = paths.map_batches(
        item_reader(run.tasks, run.setups, run.limit), batch_size=1, num_cpus=LIGHT_CPUS
    )
    ds = ds.map_batches(
        add_requests,  # type: ignore[arg-type]  # Ray's stub does not know fn_kwargs
        fn_kwargs={
            "model": cfg.repo,
            "revision": cfg.revision,
            "sampling": run.sampling,
            "with_messages": cfg.engine not in BASELINES,
            "text_only": cfg.modality == "text",
        },
        **light,
    )
    if done:
        ds = ds.map_batches(_drop_done(done), **light)
    stage = engine_stage or STAGES[cfg.engine]
    opts = run.engine_options
    if _writes_in_step(cfg, engine_stage):
        # One step answers, scores and writes each shard's rows, so shards land as the run
        # goes: apart, Ray buffers a fused task's output into one block per item file, and
        # the writer saw every row only when the file was done (baseline_step).
        step = AnswerScoreWrite(
            baseline_engine(cfg.engine, opts.baseline_delay_s), opts.batch_size, writer
        )
        return ds.map_batches(step, batch_size=run.shard_rows, **light)
    ds = stage(ds, cfg, opts)
    # Scored, each engine batch goes to the driver, which writes the shards (HeldRows).
    return ds.map_batches(score_block, batch_size=None, **light)


def _writes_in_step(cfg: ModelConfig, engine_stage: EngineStage | None) -> bool:
    """Whether the run is a baseline's, whose one step answers, scores and writes."""
    stage = engine_stage or STAGES[cfg.engine]
    return stage is BASELINE_STAGES.get(cfg.engine)
