"""The `sweep` command's options: which models, items and setups, how many at once, the
dry run and the probes."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipelines.command_line.args import (
    existing_dir,
    existing_file,
    image_size_int,
    non_negative_float,
    output_location,
    per_task_int,
    positive_int,
    positive_seconds,
    replicas_int,
    seconds_float,
    seed_int,
)
from pipelines.engines.prompts.requests import add_sampling_arguments
from pipelines.noregeo.generate import MIN_IMAGE_SIZE
from pipelines.noregeo.task_selection import TASKS_HELP
from pipelines.sweep.probes import DEFAULT_GRID


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `python -m pipelines sweep`."""
    parser.add_argument(
        "--models", type=existing_dir, default=Path("configs/models"),
        help="folder of model config YAML files",
    )  # fmt: skip
    parser.add_argument("--only", default=None, help="comma-separated config names")
    parser.add_argument("--benchmarks", default="noregeo", help="noregeo,geobuild")
    parser.add_argument(
        "--out", required=True, type=output_location, metavar="RESULTS",
        help="results root or URI (s3://...): RESULTS/noregeo, RESULTS/geobuild, RESULTS/sweep",
    )  # fmt: skip
    parser.add_argument("--items", type=output_location, help="item dir (default RESULTS/items)")
    parser.add_argument("--per-task", type=per_task_int, default=100, help="items per task")
    parser.add_argument("--tasks", default="all", help=TASKS_HELP)
    parser.add_argument(
        "--image-size", type=image_size_int(MIN_IMAGE_SIZE), default=448,
        help="image side in pixels of generated items",
    )  # fmt: skip
    parser.add_argument(
        "--item-seed", type=seed_int, default=0,
        help="seed of the item draws, when the sweep generates the items",
    )  # fmt: skip
    add_sampling_arguments(parser)
    parser.add_argument("--batch-size", type=positive_int, default=16, help="rows per engine call")
    parser.add_argument("--replicas", type=replicas_int, default=1, help="engine replicas/model")
    parser.add_argument(
        "--shard-rows", type=positive_int, default=256,
        help="rows per result shard: what a killed run can lose at most, per writer",
    )  # fmt: skip
    parser.add_argument(
        "--baseline-delay",
        type=seconds_float,
        default=0.0,
        help="seconds per batch (latency stand-in)",
    )
    parser.add_argument(
        "--gpus",
        type=non_negative_float,
        default=None,
        help="GPUs to plan for (default: what the autoscaler can add, else what is present)",
    )
    parser.add_argument(
        "--cluster-config",
        type=existing_file,
        default=None,
        help="cluster-launcher YAML to plan GPUs from (e.g. cluster.yaml, for a dry run)",
    )
    parser.add_argument(
        "--cpu-parallel",
        type=replicas_int,
        default=None,
        help="CPU-only models at once (default: one per 4 cluster CPUs; each pipeline holds "
        "about 1 CPU of actors and needs 1 more for its read tasks)",
    )
    parser.add_argument("--progress-interval", type=positive_seconds, default=10.0, help="seconds")
    parser.add_argument(
        "--probes", type=existing_file, nargs="?", const=DEFAULT_GRID, default=None,
        metavar="GRID",
        help=f"also probe each evaluated model's own vision tower with GRID's trials "
        f"(default {DEFAULT_GRID}; its `models:` says which); results in RESULTS/probes",
    )  # fmt: skip
    parser.add_argument(
        "--keep-recorded-revisions", action="store_true",
        help="when a config's revision (e.g. main) now resolves to another commit than its "
        "results in RESULTS were made with, run the recorded commit instead of stopping",
    )  # fmt: skip
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
