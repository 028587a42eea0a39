"""`sweep --probes [GRID]`: the probe trials of each evaluated model's own vision tower.

The grid (default configs/probes/vlm-towers.yaml) lists in `models:` the model configs whose
towers it probes; each evaluated model in that list gets the grid with encoder
`hf:<its repo>` (probes/towers). Trials go to RESULTS/probes like `probe`'s, so a finished
trial is skipped on the next sweep and `probe-summarize RESULTS` prints them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipelines.engines.models.engine_kinds import ENGINE_KINDS
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.sweep.capacity import GPUCapacity
from probes.grid import EncoderSpec, GridSpec, Trial, encoder_dir, expand, load_grid, trial_path
from probes.towers import EncoderError, check_encoder
from store.errors import UsageError
from store.records import write_run_record
from store.storage import Location
from store.yaml_file import YAMLBoundError

DEFAULT_GRID = Path("configs/probes/vlm-towers.yaml")


@dataclass
class ProbeJob:
    """One model's probe trials: the grid on its tower, what is done, or why it cannot run."""

    model: str
    spec: GridSpec
    trials: list[Trial]
    pending: list[Trial] = field(default_factory=list)
    reason: str | None = None


def read_grid(path: Path) -> GridSpec:
    """The --probes grid, validated; a bad file is a usage error naming it."""
    try:
        return load_grid(path)
    except (OSError, ValidationError, yaml.YAMLError, YAMLBoundError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UsageError(f"--probes {path}: {first}") from err
    except UnicodeDecodeError as err:
        raise UsageError(f"--probes {path} is not UTF-8 text (byte {err.start})") from err


def model_grid(spec: GridSpec, cfg: ModelConfig) -> GridSpec:
    """`spec` on `cfg`'s own tower; the revision comes from the model config."""
    encoder = EncoderSpec(arch=f"hf:{cfg.repo}", pretrained=None)
    return spec.model_copy(update={"encoder": encoder})


def plan_probes(
    spec: GridSpec, configs: list[ModelConfig], out: Location, capacity: GPUCapacity
) -> list[ProbeJob]:
    """A ProbeJob per evaluated model that the grid lists, in the grid's order; then each
    evaluated open VLM the grid leaves out, as not probed."""
    by_name = {c.name: c for c in configs}
    jobs = []
    for name in spec.models:
        cfg = by_name.get(name)
        if cfg is None:
            continue  # listed in the grid, not evaluated by this sweep
        grid = model_grid(spec, cfg)
        trials = expand(grid)
        job = ProbeJob(model=name, spec=grid, trials=trials)
        if not isinstance(out, Path):
            job.reason = "not run: probe results are written to local folders only"
        else:
            job.pending = [t for t in trials if not trial_path(out, t).exists()]
            job.reason = capacity.reason_not_runnable(spec.gpus_per_trial) if job.pending else None
        jobs.append(job)
    for cfg in configs:  # VLMs the sweep evaluates whose tower the grid leaves out
        open_vlm = cfg.modality == "image-text" and ENGINE_KINDS[cfg.engine] == "model"
        if open_vlm and cfg.name not in spec.models:
            reason = "not probed: not in the grid's models (docs/probes.md says why)"
            jobs.append(ProbeJob(model=cfg.name, spec=spec, trials=[], reason=reason))
    return jobs


def print_probe_plan(jobs: list[ProbeJob], grid: Path, out: Any = None) -> None:
    """The dry run's probe table: per model the encoder, trials, done, to run, state."""
    out = out or sys.stdout
    print(f"\nprobes ({grid}): {len(jobs)} model(s)", file=out)
    print(f"{'model':34} {'encoder':44} {'trials':>6} {'done':>5} {'to run':>6}  state", file=out)
    for job in jobs:
        done = len(job.trials) - len(job.pending) if job.reason is None else 0
        state = job.reason or ("done" if not job.pending else "will run")
        arch = job.spec.encoder.arch if job.trials else "-"
        print(f"{job.model[:34]:34} {arch[:44]:44} {len(job.trials):>6} "
              f"{done:>5} {len(job.pending):>6}  {state}", file=out)  # fmt: skip
    probed = [job.spec for job in jobs if job.trials]
    if probed:
        spec = probed[0]
        print(f"each: {spec.name}, token_norm {spec.token_norm}, configs "
              f"{','.join(spec.configs)}, regimes {','.join(spec.regimes)}", file=out)  # fmt: skip


def _record(job: ProbeJob, grid: Path, out: Path) -> None:
    """The run record `probe` writes, so reports see these runs' grid and encoder."""
    write_run_record(
        encoder_dir(out, job.spec.encoder.arch, job.spec.encoder.pretrained),
        {
            "benchmark": "probes",
            "grid": job.spec.model_dump(mode="json"),
            "grid_file": str(grid),
            "executor": "ray",
            "trials": len(job.trials),
            "trials_to_run": len(job.pending),
            "sweep_model": job.model,
            "argv": sys.argv,
        },
    )


def run_probes(jobs: list[ProbeJob], grid: Path, out: Path) -> dict[str, str]:
    """Run each model's pending trials on the Ray cluster; returns `<model> probes` -> state."""
    from pipelines.probes.grid import run_with_ray

    states: dict[str, str] = {}
    for job in jobs:
        key = f"{job.model} probes"
        if job.reason or not job.pending:
            states[key] = job.reason or "done"
            continue
        try:
            check_encoder(job.spec.encoder.arch, job.spec.encoder.pretrained)
            _record(job, grid, out)
            run_with_ray(job.spec, job.pending, out)
            states[key] = "done"
        except EncoderError as err:
            states[key] = f"not run: {err}"
        except Exception as err:  # one model's failure never stops the others
            first = str(err).strip().splitlines()[-1] if str(err).strip() else repr(err)
            states[key] = f"failed: {first[:200]}"
    return states
