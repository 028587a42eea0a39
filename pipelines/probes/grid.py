"""`python -m pipelines probe --grid configs/probes/NAME.yaml --out RESULTS`: a probe grid.

Each trial runs in a Ray actor (one GPU per trial when the cluster has GPUs, else a share
of the CPUs) and writes RESULTS/probes/model=<encoder>/trial-<id>.parquet atomically. A
trial whose file exists is skipped, so a killed grid resumes where it stopped. Each run
first writes its record, with the resolved grid (YAML plus --arch/--pretrained), to
RESULTS/probes/model=<encoder>/runs/<UTC stamp>-<pid>-<tag>.json.
`--executor local` runs the trials one after another in this process (debugging, no Ray).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml
from pydantic import ValidationError

from pipelines.command_line.args import existing_file, name_text, output_dir, positive_int
from pipelines.terminal.progress import progress
from probes.grid import GridSpec, Trial, encoder_dir, expand, load_grid, run_trial, trial_path
from probes.towers import TOKEN_NORMS, EncoderError, check_encoder
from store.atomic import sweep_temporaries
from store.errors import UsageError
from store.records import write_run_record
from store.storage import Location
from store.yaml_file import YAMLBoundError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `probe` command's flags."""
    parser.add_argument(
        "--grid", type=existing_file, required=True, help="grid YAML (configs/probes/)"
    )
    parser.add_argument(
        "--out", type=output_dir, required=True, metavar="RESULTS",
        help="results root; trials go under RESULTS/probes",
    )  # fmt: skip
    parser.add_argument(
        "--arch",
        type=name_text,
        help="override the grid's encoder: open_clip name or hf:<repo|config|path>",
    )
    parser.add_argument(
        "--pretrained",
        type=name_text,
        help="override the grid's weights: tag, file or none (hf: a revision)",
    )
    parser.add_argument(
        "--token-norm", choices=TOKEN_NORMS, default=None,
        help="tokens the head reads: none = the last block's output, as HF last_hidden_state "
        "(the paper; grid default); ln_post = through the tower's final norm",
    )  # fmt: skip
    parser.add_argument(
        "--executor", choices=("ray", "local"), default="ray",
        help="ray: trials as Ray actors (GPUs on a cluster); local: one after another here",
    )  # fmt: skip
    parser.add_argument(
        "--max-trials", type=positive_int, help="run at most this many pending trials"
    )


def pending_trials(trials: list[Trial], out: Path) -> list[Trial]:
    """Trials without a result file (temporaries of a killed writer are swept first)."""
    if (out / "probes").exists():
        sweep_temporaries(out / "probes")
    return [t for t in trials if not trial_path(out, t).exists()]


def _cluster_slots(spec: GridSpec) -> tuple[int, dict[str, float]]:
    """How many trials run at once, and the Ray resources of each."""
    import ray

    resources = ray.cluster_resources()
    gpus = resources.get("GPU", 0.0)
    if gpus >= spec.gpus_per_trial > 0:
        return int(gpus // spec.gpus_per_trial), {"num_gpus": spec.gpus_per_trial, "num_cpus": 1}
    cpus = resources.get("CPU", 1.0)
    return max(1, int(cpus // spec.cpus_per_trial)), {"num_cpus": spec.cpus_per_trial}


def _record_run(spec: GridSpec, args: argparse.Namespace, trials: int, todo: int) -> Location:
    """Write this run's record (the resolved grid as `grid`) in the encoder's results folder."""
    return write_run_record(
        encoder_dir(args.out, spec.encoder.arch, spec.encoder.pretrained),
        {
            "benchmark": "probes",
            "grid": spec.model_dump(mode="json"),
            "grid_file": str(args.grid),
            "executor": args.executor,
            "max_trials": args.max_trials,
            "trials": trials,
            "trials_to_run": todo,
            "argv": sys.argv,
        },
    )


def run_with_ray(spec: GridSpec, trials: list[Trial], out: Path) -> list[str]:
    """Run `trials` on an actor pool; results are written by the actors as they finish."""
    import ray
    from ray.util import ActorPool

    from actors.probe_trainer import ProbeTrainer
    from pipelines.engines.session.ray_session import ensure_ray

    ensure_ray()
    slots, resources = _cluster_slots(spec)
    remote = ray.remote(**resources)(ProbeTrainer)  # type: ignore[call-overload]
    actors = [remote.remote(str(out.resolve())) for _ in range(min(slots, len(trials)))]
    pool = ActorPool(actors)
    done: list[str] = []
    results = pool.map_unordered(lambda a, t: a.run.remote(t), trials)
    for path in progress(results, len(trials), "probe trials", "trial"):
        done.append(path)
    for actor in actors:
        ray.kill(actor)
    return done


def plan_line(grid: str, trials: int, pending: int, todo: int) -> str:
    """What this run does, counted from the folder: trials done are those on disk, not those
    `--max-trials` leaves for later (issue 39: a fresh folder read "8 done, 2 to run")."""
    line = f"probe grid {grid}: {trials} trials, {trials - pending} done, {todo} to run"
    if todo < pending:
        line += f", {pending - todo} left for a later run (--max-trials {todo})"
    return line


def run(args: argparse.Namespace) -> int:
    """Check the grid and its weights, record the run, run the pending trials; exit code 0."""
    try:
        spec = load_grid(args.grid)
    except (OSError, ValidationError, yaml.YAMLError, YAMLBoundError) as err:
        raise UsageError(f"--grid {args.grid}: {err}") from err
    except UnicodeDecodeError as err:
        raise UsageError(f"--grid {args.grid} is not UTF-8 text (byte {err.start})") from err
    if args.arch:
        spec.encoder.arch = args.arch
    if args.pretrained is not None:
        spec.encoder.pretrained = args.pretrained
    if args.token_norm is not None:
        spec.token_norm = args.token_norm
    try:
        # Fail before any trial starts: a missing file, an unreachable hub or a model without
        # a vision tower is a usage error.
        check_encoder(spec.encoder.arch, spec.encoder.pretrained)
    except EncoderError as err:
        raise UsageError(str(err)) from err
    trials = expand(spec)
    pending = pending_trials(trials, args.out)
    todo = pending if args.max_trials is None else pending[: args.max_trials]
    _record_run(spec, args, len(trials), len(todo))
    if not todo:  # a finished grid started again: no Ray, no actors
        print(f"nothing to do: {len(trials)} trials already in {args.out / 'probes'}")
        return 0
    print(plan_line(spec.name, len(trials), len(pending), len(todo)))
    start = time.perf_counter()
    if args.executor == "local":
        for trial in progress(todo, len(todo), "probe trials", "trial"):
            run_trial(trial, args.out)
    elif todo:
        run_with_ray(spec, todo, args.out)
    print(f"{len(todo)} trials in {time.perf_counter() - start:.1f}s -> {args.out / 'probes'}")
    return 0
