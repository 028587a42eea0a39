"""Task generators registered by task ID, so CLIs and configs choose them by string."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal, Protocol

from geometry.figure import Draw
from geometry.tasks.options import GeneratorOptions

AnswerType = Literal["choice", "number", "point"]
Kind = Literal["classification", "numeric", "unstable"]


class GenerateOne(Protocol):
    """(rng, label[, options]) -> Draw. `label` is the option the item must have (choice
    tasks) or None; `options` default to the paper's (`geometry.tasks.options`)."""

    def __call__(
        self, rng: random.Random, label: str | None, options: GeneratorOptions = ...
    ) -> Draw:
        """One item's draw."""
        ...


class GeneratePair(Protocol):
    """(rng, (first label, second label)[, options]) -> the matched pair; U-tasks only."""

    def __call__(
        self, rng: random.Random, labels: tuple[str, str], options: GeneratorOptions = ...
    ) -> tuple[Draw, Draw]:
        """One pair's two draws."""
        ...


_KIND_BY_PREFIX: dict[str, Kind] = {"C": "classification", "N": "numeric", "U": "unstable"}


@dataclass(frozen=True)
class TaskSpec:
    """One NoReGeo task: identity, answer format and its generator."""

    task_id: str  # e.g. "C-ACM-PST"
    name: str  # e.g. "parallelogram_size"
    category: str  # the paper's category, e.g. "Area comparison"
    answer_type: AnswerType
    options: tuple[str, ...]  # choice options in prompt order; () for number/point
    generate: GenerateOne | None = None
    generate_pair: GeneratePair | None = None

    @property
    def kind(self) -> Kind:
        """The task family, from the first letter of the ID: classification, numeric or unstable."""
        return _KIND_BY_PREFIX[self.task_id[0]]

    @property
    def paired(self) -> bool:
        """Whether items come in matched yes/no pairs (U-tasks, built by `generate_pair`)."""
        return self.generate_pair is not None


_REGISTRY: dict[str, TaskSpec] = {}


def register(spec: TaskSpec) -> TaskSpec:
    """Add `spec` to the registry and return it; a duplicate ID or not one generator is an error."""
    if spec.task_id in _REGISTRY:
        raise ValueError(f"task {spec.task_id} registered twice")
    if (spec.generate is None) == (spec.generate_pair is None):
        raise ValueError(f"task {spec.task_id} needs exactly one of generate / generate_pair")
    _REGISTRY[spec.task_id] = spec
    return spec


def all_tasks() -> dict[str, TaskSpec]:
    """Every registered task by ID, in DESIGN.md's table order. Complete whenever this module
    can be imported: importing it runs `geometry/tasks/__init__.py` first, which registers
    every generator."""
    return dict(_REGISTRY)


def get_task(task_id: str) -> TaskSpec:
    """The registered task with ID `task_id`; KeyError listing the valid IDs otherwise."""
    tasks = all_tasks()
    if task_id not in tasks:
        raise KeyError(f"unknown task {task_id!r}; valid: {', '.join(tasks)}")
    return tasks[task_id]
