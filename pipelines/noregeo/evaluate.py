"""`evaluate`: the command. Its options, the checks of its input before anything is
written, the run's one settings model, and the summary it prints; the run itself:
pipelines.noregeo.evaluate_pipeline.evaluate.
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

from geometry.item import SETUPS
from pipelines.command_line.args import (
    any_location,
    output_location,
    per_task_int,
    positive_int,
    replicas_int,
    seconds_float,
    share,
)
from pipelines.engines.models.engine_kinds import CHECKPOINT_ENGINES, ENGINES
from pipelines.engines.models.model_resolution import (
    add_model_arguments,
    config_engine,
    resolve_model,
)
from pipelines.engines.models.model_schema import ModelConfigError
from pipelines.engines.prompts.preflight import PreflightError, check_model
from pipelines.engines.prompts.prompt_canary import CanaryError
from pipelines.engines.prompts.requests import (
    ITEM_COLUMNS_NEEDED,
    SamplingConfig,
    add_sampling_arguments,
)
from pipelines.engines.stages.engine_stages import MissingKeyError, api_key
from pipelines.engines.stages.gpus import NoGPUError
from pipelines.engines.stages.options import EngineOptions
from pipelines.noregeo.evaluate_pipeline import BENCHMARK, evaluate
from pipelines.noregeo.evaluate_preflight import longest_prompts
from pipelines.noregeo.generate import (
    MANIFEST,
    SHARD_GLOB,
    check_item_shards,
    parse_list,
    read_manifest,
)
from pipelines.noregeo.run_health import run_health
from pipelines.noregeo.run_settings import EvaluateSettings
from pipelines.noregeo.sample_log import check_sample_dir, write_sample_logs
from pipelines.noregeo.subset_balance import balance_line
from pipelines.noregeo.task_selection import TASKS_HELP, select_tasks
from pipelines.terminal.interrupt import on_interrupt, saved_rows
from store.errors import UsageError
from store.records import RETRY_ERRORS, model_dir, model_slug
from store.storage import Location, children

log = logging.getLogger(__name__)


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
    balance = balance_line(files, tasks, setups, args.per_task)
    if balance is not None:
        print(balance)
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
    from pipelines.noregeo.summarize import (
        HEADLINE,
        accuracy_line,
        load_results,
        summary_tables,
    )
    from pipelines.terminal.output import print_tables

    results = load_results(args.out, model=cfg.name)
    root = model_dir(args.out, BENCHMARK, cfg.name)
    written_json = write_results_json(args.out, cfg.name, results, args.items)
    health = run_health(results, cfg, tasks, setups, args.per_task, run_settings.sampling)
    if written:
        print(f"{written} new rows in {root}")
        tables = summary_tables(results)
        print_tables({n: t for n, t in tables.items() if n in HEADLINE})
        print(f"wrote {written_json}")
        print(accuracy_line(tables["overall"]))
    else:  # evaluate() found every request of the run done, and started no Ray
        print(
            f"nothing to do: 0 new rows; {results.height} rows already in {root} "
            f"(`geosee summarize {args.out}` shows their tables)"
        )
        print(accuracy_line(summary_tables(results)["overall"]))  # what a first run ends with
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
