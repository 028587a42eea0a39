"""Build the NoReGeo item rows of one task: seeded draws, balanced labels, prompts, images.

Determinism: everything is a function of (seed, task_id) only. Each item (or U-task pair)
gets its own `random.Random` seeded from sha256(f"{seed}:{task_id}:{index}"), so items do
not depend on one another, on the order tasks are built in, or on Python's hash seed.

Labels: choice tasks get their labels in blocks, each block every option once in a seeded
random order, so that every prefix of a task's items is balanced: the first N items' label
counts differ by at most 1 (`evaluate --per-task N` takes such a prefix; yes/no exactly half
when N is even). U-tasks are built in pairs (items 2k and 2k+1, pair_id f"{task_id}-p{k:03d}",
both rows carrying the pair's seed), their pairs shuffled within blocks that hold every
option equally often; an odd per_task ends with a lone item of the pair generator's first
figure and pair_id None.

Options: `GeneratorOptions` (geometry.tasks.options) choose where items follow the paper's
wording; the defaults are the paper's. The grid step reaches the images through `render`.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence

from geometry.figure import Draw, answer_json
from geometry.item import IMAGE_SETUPS, SETUPS, Item
from geometry.prompts import SYSTEM_PROMPT, build_prompt
from geometry.tasks.options import DEFAULT_OPTIONS, GeneratorOptions
from geometry.tasks.registry import TaskSpec, get_task

# Bump whenever a generator, threshold or prompt change alters any item for a fixed seed.
# gen-2: GeneratorOptions (paper defaults: x-axis reflection, 90-degree rotation, the paper's
# semicircle question, the semicircle and the rotation drawn in full images, half-unit grid).
# gen-3: labels in blocks of every option once, so every prefix of a task is label-balanced
# (gen-2 shuffled the whole task's labels: its first 2 yes/no items could both be "yes").
GENERATOR_VERSION = "noregeo-gen-3"

Render = Callable[[Draw, str, int], bytes]


def item_seed(seed: int, task_id: str, key: int | str) -> int:
    """A stable 63-bit seed from (run seed, task, item index or purpose)."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits Parquet's signed int64


def balanced_labels(options: Sequence[str], count: int, rng: random.Random) -> list[str]:
    """`count` labels in blocks of every option once, each block in its own shuffled order:
    in every prefix the counts of any two options differ by at most 1.

    >>> labels = balanced_labels(("a", "b", "c"), 7, random.Random(0))
    >>> [sorted(labels[:n].count(o) for o in "abc") for n in (2, 3, 7)]
    [[0, 1, 1], [1, 1, 1], [2, 2, 3]]
    """
    labels: list[str] = []
    while len(labels) < count:
        block = list(options)
        rng.shuffle(block)
        labels += block
    return labels[:count]


def _pairs_in_blocks(
    options: Sequence[str], pairs: int, rng: random.Random
) -> list[tuple[str, str]]:
    """`pairs` label pairs of two different options, every prefix of pairs balanced: the
    labels run round-robin over a shuffled option order (consecutive ones differ), and the
    pairs are shuffled only within blocks of len(options) pairs, which hold every option
    twice (a prefix's counts then differ by at most 1 for three options, 2 for more, and by
    0 at a block's end)."""
    order = list(options)
    rng.shuffle(order)
    flat = [order[i % len(order)] for i in range(2 * pairs)]
    paired = [(flat[2 * k], flat[2 * k + 1]) for k in range(pairs)]
    out: list[tuple[str, str]] = []
    for start in range(0, pairs, len(order)):
        block = paired[start : start + len(order)]
        rng.shuffle(block)
        out += block
    return out


def _labelled_draws(
    task: TaskSpec, per_task: int, seed: int, options: GeneratorOptions = DEFAULT_OPTIONS
) -> list[tuple[Draw, str | None, int]]:
    """(draw, pair_id, item seed) for each of the task's `per_task` items, in index order."""
    label_rng = random.Random(item_seed(seed, task.task_id, "labels"))
    out: list[tuple[Draw, str | None, int]] = []
    if not task.paired:
        labels: list[str | None] = [None] * per_task
        if task.options:
            labels = list(balanced_labels(task.options, per_task, label_rng))
        for index, label in enumerate(labels):
            s = item_seed(seed, task.task_id, index)
            assert task.generate is not None
            out.append((task.generate(random.Random(s), label, options), None, s))
        return out
    assert task.generate_pair is not None
    if set(task.options) == {"yes", "no"}:
        pairs = [("yes", "no")] * ((per_task + 1) // 2)
    else:
        pairs = _pairs_in_blocks(task.options, (per_task + 1) // 2, label_rng)
    for k, labels_pair in enumerate(pairs):
        index = 2 * k
        s = item_seed(seed, task.task_id, index)
        first, second = task.generate_pair(random.Random(s), labels_pair, options)
        if index + 1 < per_task:
            pair_id = f"{task.task_id}-p{k:03d}"
            out += [(first, pair_id, s), (second, pair_id, s)]
        else:
            out.append((first, None, s))
    return out


def task_draws(
    task_id: str, per_task: int, seed: int, options: GeneratorOptions = DEFAULT_OPTIONS
) -> list[tuple[Draw, str | None, int]]:
    """The draws behind `build_items` (draw, pair_id, item seed), without prompts or images."""
    return _labelled_draws(get_task(task_id), per_task, seed, options)


def build_items(
    task_id: str,
    per_task: int,
    seed: int,
    setups: Sequence[str] = SETUPS,
    image_size: int = 448,
    render: Render | None = None,
    options: GeneratorOptions = DEFAULT_OPTIONS,
) -> list[Item]:
    """The item rows of one task: `per_task` items x `setups`, item-major.

    Rows of one item share `item_id` (f"{task_id}-{index:04d}"), answer, geometry and seed.
    Image setups get `render(draw, setup, image_size)` (PNG bytes), or None without `render`;
    `options.grid_step` is the caller's to bind into `render` (see pipelines/noregeo/generate).
    """
    if per_task < 0:
        raise ValueError(f"per_task must be >= 0, got {per_task}")
    unknown = [s for s in setups if s not in SETUPS]
    if unknown:
        raise ValueError(f"unknown setups {unknown}; valid: {', '.join(SETUPS)}")
    task = get_task(task_id)
    rows: list[Item] = []
    for index, (draw, pair_id, s) in enumerate(_labelled_draws(task, per_task, seed, options)):
        answer, geometry = answer_json(draw.answer), draw.geometry_json()
        for setup in setups:
            image = render(draw, setup, image_size) if render and setup in IMAGE_SETUPS else None
            rows.append(
                Item(
                    item_id=f"{task_id}-{index:04d}",
                    task=task.task_id,
                    task_name=task.name,
                    kind=task.kind,
                    category=task.category,
                    answer_type=task.answer_type,
                    options=list(task.options),
                    setup=setup,
                    system_prompt=SYSTEM_PROMPT,
                    prompt=build_prompt(task, draw, setup, options),
                    image=image,
                    answer=answer,
                    geometry=geometry,
                    pair_id=pair_id,
                    seed=s,
                    generator_version=GENERATOR_VERSION,
                )
            )
    return rows
