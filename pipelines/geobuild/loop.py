"""`geobuild`: the GeoBuild agent loop's command, and the sweep's entry to it.

Both build a run's settings and engine and hand the chosen problems to the round loop
(pipelines.geobuild.rounds.Loop); its requests and bookkeeping: pipelines.geobuild.conversations.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from geometry.dsl.dataset import load_problems
from geometry.dsl.prompts import FEEDBACK_MODES
from pipelines.command_line.args import (
    image_size_int,
    output_location,
    positive_int,
    replicas_int,
    seed_int,
)
from pipelines.engines.models.model_resolution import add_model_arguments, config_engine
from pipelines.engines.models.model_schema import ModelConfig, ModelConfigError
from pipelines.engines.prompts.prompt_canary import CanaryError
from pipelines.engines.prompts.requests import add_sampling_arguments
from pipelines.engines.stages.gpus import NoGPUError
from pipelines.geobuild.dataset_args import add_dataset_arguments, load_dataset
from pipelines.geobuild.engines import Engine, model_stage, resolve_engine, valid_engines
from pipelines.geobuild.problem_selection import select_problems, stratified_problems
from pipelines.geobuild.public_prompts import load_public_prompts
from pipelines.geobuild.react_protocol import PROTOCOLS
from pipelines.geobuild.rounds import Loop
from pipelines.geobuild.rows import read_round
from pipelines.geobuild.settings import (
    GEOSEE_MAX_TOKENS,
    PUBLIC_MAX_TOKENS,
    GeoBuildSettings,
    default,
)
from store.errors import UsageError
from store.storage import Location


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `geobuild` command's options (defaults: GeoBuildSettings)."""
    add_dataset_arguments(parser)
    # Not argparse choices: an answer baseline gets resolve_engine's reason, not "invalid".
    engines = valid_engines()
    parser.add_argument(
        "--engine",
        default=None,
        metavar="{" + ",".join(engines) + "}",
        help="what answers; default: the engine the model config names",
    )
    add_model_arguments(parser, "model config/checkpoint, hub id, or JSONL file")
    parser.add_argument(
        "--max-rounds", type=positive_int, default=default("max_rounds"),
        help="replies per problem at most",
    )  # fmt: skip
    parser.add_argument(
        "--feedback", default=default("feedback"), choices=FEEDBACK_MODES,
        help="what the next round is told: the error, plus the conditions, plus the figure",
    )  # fmt: skip
    parser.add_argument(
        "--no-image", action="store_true",
        help="never attach the figure (with --protocol public: its vision-off arm)",
    )  # fmt: skip
    parser.add_argument(
        "--protocol", default=default("protocol"), choices=PROTOCOLS,
        help="geosee: our multi-turn chat with feedback; public: the GeoBuildBench ReAct "
        "agent's prompts, 3-step memory and latest figure (needs --public-repo)",
    )  # fmt: skip
    parser.add_argument(
        "--public-repo", default=None, metavar="PATH",
        help="a GeoBuildBench checkout: --protocol public reads its prompts/ files",
    )  # fmt: skip
    parser.add_argument(
        "--stratified-sample", type=positive_int, default=None, metavar="N",
        help="N problems, 70%% solved and 30%% failed in --stratify-from (the public "
        "vision ablation's sample)",
    )  # fmt: skip
    parser.add_argument(
        "--stratify-from", default=None, metavar="PRIOR",
        help="an earlier geobuild --out (or its geobuild/model=NAME folder) whose outcomes "
        "--stratified-sample draws on",
    )  # fmt: skip
    parser.add_argument(
        "--sample-seed", type=seed_int, default=default("sample_seed"),
        help="seed of --stratified-sample",
    )  # fmt: skip
    parser.add_argument(
        "--first", type=positive_int, help="the first N problems only (in data order, after --ids)"
    )
    parser.add_argument("--ids", default=None, help="comma-separated problem ids")
    add_sampling_arguments(
        parser,
        temperature_help="sampling temperature; 0 is greedy (the public GeoBuildBench runner "
        "uses 0)",
        max_tokens_help="tokens a reply may have at most (clamped to what the context "
        f"leaves); default: {GEOSEE_MAX_TOKENS} with --protocol geosee, {PUBLIC_MAX_TOKENS} "
        "(the public runner's) with --protocol public",
        max_tokens_default=None,
    )
    parser.add_argument(
        "--pool-size", type=replicas_int, default=default("pool_size"), help="engine replicas"
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=default("batch_size"),
        help="rows per engine call",
    )  # fmt: skip
    parser.add_argument(
        "--executors", type=replicas_int, default=default("executors"),
        help="DSL-executor actors",
    )  # fmt: skip
    # Checked here, not in the Ray executors: a bad size must fail before settings.json.
    parser.add_argument(
        "--image-size", type=image_size_int(64), default=default("image_size"), help="figure pixels"
    )
    parser.add_argument(
        "--shard-rows", type=positive_int, default=default("shard_rows"), help="rows per shard"
    )
    parser.add_argument(
        "--out", required=True, type=output_location, metavar="RESULTS",
        help="results root or URI (s3://...); rows go under RESULTS/geobuild",
    )  # fmt: skip


def check_protocol(args: argparse.Namespace) -> None:
    """The public protocol's prompts and the prior run of a stratified sample are readable;
    UsageError naming the flag otherwise. (Which of these flags go together is declared in
    pipelines.command_line.conflicts, which the CLI checks before this runs.)"""
    if args.public_repo is not None:
        load_public_prompts(args.public_repo)  # a missing prompt file: before anything else
    if args.stratify_from is not None:
        from pipelines.geobuild.stratified import prior_folder

        prior_folder(args.stratify_from)  # before the data set is read


def run(args: argparse.Namespace) -> int:
    """Run `geobuild` with parsed options and print its summary; the exit code."""
    check_protocol(args)
    problems = load_dataset(args.dataset, args.lang)
    settings = GeoBuildSettings.from_args(args, str(Path(args.dataset).resolve()))
    chosen = select_problems(problems, settings.ids, settings.limit)
    if settings.stratified_sample is not None and settings.stratify_from is not None:
        chosen = stratified_problems(
            chosen, settings.stratify_from, settings.stratified_sample, settings.sample_seed
        )
    try:  # no --engine: the model config's own (lm-eval's habit)
        engine_name = args.engine or config_engine(args.model)
    except ModelConfigError as err:
        raise UsageError(str(err)) from err
    engine = resolve_engine(engine_name, args.model, args.revision, args.trust_remote_code)
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file; give a directory")
    try:
        Loop(settings, engine, args.out).run(chosen)
    except (NoGPUError, CanaryError) as err:
        raise UsageError(str(err)) from err
    from pipelines.geobuild.summarize import print_tables, summary_tables

    tables = summary_tables(args.out, model=engine.cfg.name)
    print_tables(tables)
    from pipelines.geobuild.result_line import result_line
    from pipelines.geobuild.results_json import write_results_json

    print(f"wrote {write_results_json(args.out, engine.cfg.name)}")
    print(result_line(tables["overall"], engine.cfg.name))
    return 0


# -- the sweep's entry ---------------------------------------------------------------------
def sweep_model(
    cfg: ModelConfig,
    out: Location,
    limit: int | None,
    *,
    max_rounds: int | None = None,
    max_tokens: int | None = None,
) -> int:
    """GeoBuild for one sweep model with GeoBuildSettings' defaults; returns rows written.

    `sweep --benchmarks geobuild` calls this once per model with the materialised config
    (local repos already filled in), so the config is used as given, never re-resolved by
    name. The data set is `$GEOBUILD_DATASET`, else `<repo>/../shared/geobuildbench`;
    `limit` keeps the first N problems. `max_rounds` and `max_tokens` override the
    defaults (tests use them to keep a CPU run short). NoReGeo's answer baselines have no
    GeoBuild program: they write nothing and return 0.
    """
    import os

    from pipelines.engines.models.engine_kinds import BASELINES

    if cfg.engine in BASELINES:
        print(f"GeoBuild not run for {cfg.name}: {cfg.engine} is a NoReGeo answer baseline")
        return 0
    beside_repo = Path(__file__).resolve().parents[3] / "shared" / "geobuildbench"
    dataset = Path(os.environ.get("GEOBUILD_DATASET") or beside_repo)
    if not dataset.exists():
        raise FileNotFoundError(
            f"GeoBuild data not found at {dataset}; set GEOBUILD_DATASET to the directory "
            "holding geoqa3_dataset_en.json"
        )
    settings = GeoBuildSettings(dataset=str(dataset.resolve()), limit=limit)
    if max_rounds is not None:
        settings = settings.model_copy(update={"max_rounds": max_rounds})
    if max_tokens is not None:
        sampling = settings.sampling.model_copy(update={"max_tokens": max_tokens})
        settings = settings.model_copy(update={"sampling": sampling})
    problems = select_problems(load_problems(dataset, settings.lang), None, limit)
    loop = Loop(settings, Engine(cfg, model_stage(cfg.engine)), out)
    rounds = range(1, loop.max_rounds + 1)
    before = sum(read_round(loop.root, k).height for k in rounds)
    loop.run(problems)
    return sum(read_round(loop.root, k).height for k in rounds) - before
