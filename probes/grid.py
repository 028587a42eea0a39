"""A probe grid: which trials a YAML asks for, and how one trial runs and records itself.

A trial is one probe: an encoder config (UF/FF/UD/FD = unfrozen/frozen x full/dot training
images), a training regime ("separate": one task; "joint": all grid tasks together), and the
tasks it is tested on, each on full and dot images. A per-task probe tested on other tasks
gives the cross-task transfer matrix. The "shuffled" regime is a negative control: a per-task
probe trained and validated on labels permuted at random (`probes.data.shuffle_labels`), so
it can learn nothing about the task and must test at chance (0.5 on balanced test sets); one
that does not shows a leak between the figures and the labels, not a seeing encoder.
Each trial writes one Parquet file, atomically, named by a hash of everything that
determines its result, so a rerun skips finished trials.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa
import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from torch.utils.data import DataLoader

from probes.data import (
    PROBE_TASKS,
    SETUP_OF_SUBSCRIPT,
    Example,
    ProbeImages,
    shuffle_labels,
    task_splits,
)
from probes.encoder import ProbeModel
from probes.towers import PAPER_TOKEN_NORM, TokenNorm, load_tower, parse_arch
from probes.train import TrainConfig, predict, train_probe
from store.atomic import TMP_PREFIX, write_parquet_atomic
from store.records import model_slug
from store.yaml_file import load_bounded

ProbeConfig = Literal["UF", "FF", "UD", "FD"]
Regime = Literal["separate", "joint", "shuffled"]
JOINT = "All"  # train_tasks label of a joint probe, as in the paper's tables


class EncoderSpec(BaseModel):
    """The grid's `encoder:` section: which vision tower (probes/towers), with which weights."""

    model_config = ConfigDict(extra="forbid")
    arch: str = Field(
        description="open_clip name (ViT-B-32, open_clip:ProbeTiny-ViT-32) or hf:<repo|path>"
    )
    pretrained: str | None = Field(
        default=None,
        description="open_clip: tag, weights file, or null for random weights; hf: revision",
    )


class DataSpec(BaseModel):
    """The grid's `data:` section: per-task split sizes, image size and the grid's one seed."""

    model_config = ConfigDict(extra="forbid")
    train: int = Field(description="training images per task (even: yes/no balanced)")
    val: int = Field(description="validation images per task, for early stopping")
    test: int = Field(description="test images per task and image setup")
    seed: int = Field(default=0, description="seed of all draws; splits use disjoint streams")
    image_size: int = Field(default=224, description="rendered image side in pixels")


class GridSpec(BaseModel):
    """One probe grid, as written in configs/probes/*.yaml."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="grid name, recorded on every result row")
    encoder: EncoderSpec = Field(description="the vision encoder probed")
    token_norm: TokenNorm = Field(
        default=PAPER_TOKEN_NORM,
        description="none: last block's tokens as HF's last_hidden_state (paper); ln_post: "
        "through the tower's final norm",
    )
    models: list[str] = Field(
        default_factory=list,
        description="sweep --probes: model configs whose own towers (hf:<repo>) get this grid",
    )
    tasks: list[str] = Field(description="training tasks (task IDs)")
    eval_tasks: list[str] | None = Field(
        default=None, description="test tasks; null = the training tasks"
    )
    configs: list[ProbeConfig] = Field(description="UF/FF/UD/FD")
    regimes: list[Regime] = Field(
        description="separate (per task), joint, and/or shuffled (per task, labels permuted: "
        "a control at chance)"
    )
    data: DataSpec = Field(description="split sizes and seed")
    train: TrainConfig = Field(
        default_factory=TrainConfig, description="optimiser settings; train.seed is data.seed"
    )
    cpus_per_trial: float = Field(default=1.0, description="Ray CPUs per trial without GPUs")
    gpus_per_trial: float = Field(default=1.0, description="Ray GPUs per trial on GPU clusters")

    @field_validator("tasks", "eval_tasks")
    @classmethod
    def _known_tasks(cls, tasks: list[str] | None) -> list[str] | None:
        unknown = [t for t in tasks or [] if t not in PROBE_TASKS]
        if unknown:
            raise ValueError(f"unknown probe tasks {unknown}; valid: {', '.join(PROBE_TASKS)}")
        return tasks

    @model_validator(mode="after")
    def _one_seed(self) -> GridSpec:
        # data.seed seeds the draws, the head's init and training; train.seed is set from it.
        # A train.seed that differs is refused: the trials would ignore it.
        if "seed" in self.train.model_fields_set and self.train.seed != self.data.seed:
            raise ValueError(
                f"train.seed {self.train.seed} differs from data.seed {self.data.seed}; "
                "a grid has one seed: set data.seed"
            )
        self.train.seed = self.data.seed
        return self


def load_grid(path: Path) -> GridSpec:
    """Read (bounded: store.yaml_file) and validate a grid YAML."""
    return GridSpec.model_validate(load_bounded(path))


@dataclass(frozen=True)
class Trial:
    """Everything that determines one probe's results."""

    grid: str
    arch: str
    pretrained: str | None
    config: str
    regime: str
    train_tasks: tuple[str, ...]
    eval_tasks: tuple[str, ...]
    all_tasks: tuple[str, ...]  # every task drawn, so test sets match across trials
    data: tuple[tuple[str, int], ...]
    train: tuple[tuple[str, float | int | bool], ...]
    token_norm: str = PAPER_TOKEN_NORM

    @property
    def label(self) -> str:
        """The probe's name in the tables: its one training task, or "All" for a joint probe
        (a shuffled-label control is named by its task; its regime tells it apart)."""
        return JOINT if self.regime == "joint" else self.train_tasks[0]

    @property
    def trial_id(self) -> str:
        """`<label>-<config>-<hash>`: the hash covers every field but the grid name, so a
        trial repeated in another grid reuses the result file. token_norm ln_post, what every
        trial did before the switch existed, is left out so those trials keep their IDs."""
        skip = {"grid"} | ({"token_norm"} if self.token_norm == "ln_post" else set())
        fields = {k: v for k, v in asdict(self).items() if k not in skip}
        payload = json.dumps(fields, sort_keys=True)
        digest = hashlib.sha256(payload.encode()).hexdigest()[:10]
        return f"{self.label}-{self.config}-{digest}"


def expand(spec: GridSpec) -> list[Trial]:
    """The grid's trials: regimes x training task sets x configs."""
    eval_tasks = tuple(spec.eval_tasks or spec.tasks)
    drawn = tuple(t for t in PROBE_TASKS if t in set(spec.tasks) | set(eval_tasks))
    sets: dict[str, list[tuple[str, ...]]] = {
        "separate": [(t,) for t in spec.tasks],
        "joint": [tuple(spec.tasks)],
        "shuffled": [(t,) for t in spec.tasks],
    }
    return [
        Trial(
            grid=spec.name,
            arch=spec.encoder.arch,
            pretrained=spec.encoder.pretrained,
            config=config,
            regime=regime,
            train_tasks=tasks,
            eval_tasks=eval_tasks,
            all_tasks=drawn,
            data=tuple(spec.data.model_dump().items()),
            # Without seed (it is in data): the trial IDs of grids written before TrainConfig
            # became the grid's train section stay the same.
            train=tuple(spec.train.model_dump(exclude={"seed"}).items()),
            token_norm=spec.token_norm,
        )
        for regime in spec.regimes
        for tasks in sets[regime]
        for config in spec.configs
    ]


def encoder_dir(out: Path, arch: str, pretrained: str | None) -> Path:
    """One encoder's results folder, `<out>/probes/model=<slug>`; a weights file counts by name,
    an hf: local directory by its name, an hf: repo with its revision (main when not pinned)."""
    kind, name = parse_arch(arch)
    if kind == "hf":
        local = Path(name).name if Path(name).is_dir() else name
        revision = pretrained or "main"
        return out / "probes" / f"model={model_slug(f'hf-{local}-{revision}')}"
    weights = Path(pretrained).name if pretrained and Path(pretrained).exists() else pretrained
    slug = model_slug(f"{arch}-{weights or 'random'}")
    return out / "probes" / f"model={slug}"


def trial_path(out: Path, trial: Trial) -> Path:
    """Where a trial's result rows go, in its encoder's results folder."""
    return encoder_dir(out, trial.arch, trial.pretrained) / f"trial-{trial.trial_id}.parquet"


def result_files(out: Path) -> list[Path]:
    """Every finished trial file under `out`/probes, sorted (temporaries skipped)."""
    root = out / "probes"
    if not root.exists():
        return []
    return sorted(p for p in root.rglob("trial-*.parquet") if not p.name.startswith(TMP_PREFIX))


def _loader(
    examples: list[Example],
    setup: str,
    trial: Trial,
    mean: Sequence[float],
    std: Sequence[float],
    shuffle: bool,
) -> DataLoader:
    data, train = dict(trial.data), dict(trial.train)
    # Worker processes would each fill (and, between epochs, drop) their own cache; with
    # workers, rendering again (~1000 images/s per worker) is cheaper than that memory.
    cache = int(train["num_workers"]) == 0
    images = ProbeImages(examples, setup, int(data["image_size"]), mean, std, cache=cache)
    generator = torch.Generator().manual_seed(int(data["seed"]))
    return DataLoader(
        images,
        batch_size=int(train["batch_size"]),
        shuffle=shuffle,
        generator=generator,
        num_workers=int(train["num_workers"]),
        pin_memory=torch.cuda.is_available(),
    )


def _no_weights(arch: str) -> str:
    """A row's `pretrained` when the grid names none: random open_clip weights, or the hf
    model's default revision."""
    return "main" if parse_arch(arch)[0] == "hf" else "random"


def run_trial(trial: Trial, out: Path) -> Path:
    """Train and test one probe; write its rows to `trial_path(out, trial)`."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = dict(trial.data)
    sizes = {s: int(data[s]) for s in ("train", "val", "test")}
    splits = task_splits(trial.all_tasks, sizes, int(data["seed"]))
    # Seeded before loading too: a randomly initialised encoder (`pretrained: null`) drew its
    # weights from whatever state the worker process's RNG was left in by earlier trials, so
    # the same trial gave other numbers depending on which Ray worker ran it. Seeded again
    # after, so the head's init is what it was (and the same for every encoder).
    torch.manual_seed(int(data["seed"]))
    tower = load_tower(trial.arch, trial.pretrained, trial.token_norm)  # type: ignore[arg-type]
    mean, std = tower.mean, tower.std
    torch.manual_seed(int(data["seed"]))
    frozen = trial.config[0] == "F"
    model = ProbeModel(tower, frozen=frozen, image_size=int(data["image_size"])).to(device)
    setup = trial.config[1]
    train_set = [e for t in trial.train_tasks for e in splits[t]["train"]]
    val_set = [e for t in trial.train_tasks for e in splits[t]["val"]]
    if trial.regime == "shuffled":  # validation too: early stopping must not see true labels
        train_set = shuffle_labels(train_set, int(data["seed"]), "train")
        val_set = shuffle_labels(val_set, int(data["seed"]), "val")
    cfg = TrainConfig.model_validate({**dict(trial.train), "seed": int(data["seed"])})
    log_dir = encoder_dir(out, trial.arch, trial.pretrained) / "tensorboard" / trial.trial_id
    result = train_probe(
        model,
        _loader(train_set, setup, trial, mean, std, shuffle=True),
        _loader(val_set, setup, trial, mean, std, shuffle=False),
        cfg,
        device,
        log_dir,
    )
    rows = []
    for task in trial.eval_tasks:
        for eval_setup in SETUP_OF_SUBSCRIPT:
            loader = _loader(splits[task]["test"], eval_setup, trial, mean, std, shuffle=False)
            metrics = predict(model, loader, device, cfg.amp)
            rows.append(
                {
                    "trial_id": trial.trial_id,
                    "grid": trial.grid,
                    "arch": trial.arch,
                    "pretrained": trial.pretrained or _no_weights(trial.arch),
                    "token_norm": trial.token_norm,
                    "config": trial.config,
                    "frozen": trial.config[0] == "F",
                    "train_setup": trial.config[1],
                    "regime": trial.regime,
                    "train_tasks": trial.label,
                    "eval_task": task,
                    "eval_setup": eval_setup,
                    "accuracy": metrics["accuracy"],
                    "f1": metrics["f1"],
                    "n": metrics["n"],
                    "best_val_f1": result.best_val_f1,
                    "best_step": result.best_step,
                    "steps": result.steps,
                    "stopped_early": result.stopped_early,
                    "train_seconds": result.seconds,
                    "images_per_s": result.images_per_s,
                    "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                    "host": platform.node(),
                    "finished_at": time.time(),
                    "trial_json": json.dumps(asdict(trial)),
                    "history_json": json.dumps(result.history),
                }
            )
    path = trial_path(out, trial)
    write_parquet_atomic(path, pa.Table.from_pylist(rows))
    return path
