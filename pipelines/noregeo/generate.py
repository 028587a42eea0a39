"""`generate`: the NoReGeo item table as Parquet shards (one per task) plus a manifest.

A Ray Data pipeline: one row per task flows into a generator step that draws the task's
items, renders their images and writes the task's shard atomically; the driver then writes
`manifest.json` (counts per task, setup and label; seed; generator version and options;
content hash; each shard file's sha256). Shards and manifest are byte-for-byte functions of
the arguments: same seed, same options, same hash. `evaluate` checks each shard it reads
against the manifest (`check_item_shards`) before Ray starts.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa

from geometry.item import ITEM_SCHEMA, SETUPS, Item
from geometry.items import GENERATOR_VERSION, build_items
from geometry.render import render_png
from geometry.tasks.options import (
    DEFAULT_OPTIONS,
    GRID_STEPS,
    SEMICIRCLE_FIGURES,
    SEMICIRCLE_PROMPTS,
    VARIANTS,
    GeneratorOptions,
)
from geometry.tasks.registry import all_tasks
from pipelines.command_line.args import (
    VALID_RANGE,
    image_size_int,
    output_location,
    per_task_int,
    read_json_object,
    seed_int,
)
from pipelines.noregeo.task_selection import TASKS_HELP, select_tasks
from pipelines.terminal.progress import Progress
from pipelines.terminal.suggest import did_you_mean
from store.atomic import parquet_bytes, write_bytes_atomic
from store.errors import UsageError
from store.shards import wrong_types
from store.storage import Location, location, parquet_file

MANIFEST = "manifest.json"
SHARD_FILES = "shard_file_sha256"  # manifest field: {shard name: sha256 of its bytes}
SHARD_GLOB = "part-*.parquet"
MIN_IMAGE_SIZE = 64  # smaller figures are unreadable; 0 crashed the renderer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `generate` command's options."""
    parser.add_argument(
        "--out", required=True, type=output_location, help="item directory (or URI) to write"
    )
    parser.add_argument("--per-task", type=per_task_int, default=100, help="items per task")
    parser.add_argument(
        "--item-seed",
        type=seed_int,
        default=0,
        help="seed of every item draw",
    )
    parser.add_argument("--setups", default=",".join(SETUPS), help="comma-separated setups")
    parser.add_argument("--tasks", default="all", help=TASKS_HELP)
    parser.add_argument(
        "--image-size", type=image_size_int(MIN_IMAGE_SIZE), default=448, help="image side, pixels"
    )
    add_option_arguments(parser)


def _grid_step(text: str) -> float:
    """--grid-step: 0.5 or 1 (grid units)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value not in GRID_STEPS:
        raise argparse.ArgumentTypeError(
            f"must be one of {', '.join(f'{g:g}' for g in GRID_STEPS)}, got {text}"
        )
    return value


setattr(_grid_step, VALID_RANGE, " or ".join(f"{g:g}" for g in GRID_STEPS))


def add_option_arguments(parser: argparse.ArgumentParser) -> None:
    """The generator options (geometry.tasks.options), defaults the paper's; docs/items.md
    lists each place our items differ from the paper and the option that switches it."""
    parser.add_argument(
        "--variants",
        choices=VARIANTS,
        default=DEFAULT_OPTIONS.variants,
        help="reflection and rotation: paper (across the x-axis, by 90 degrees, as the paper) "
        "or extended (also the y-axis, y=x, y=-x; 180 and 270 degrees)",
    )
    parser.add_argument(
        "--semicircle-prompt",
        choices=SEMICIRCLE_PROMPTS,
        default=DEFAULT_OPTIONS.semicircle_prompt,
        help="semicircle_triangle question: paper ('inscribed in a semicircle?') or diameter "
        "(adds 'with diameter AB')",
    )
    parser.add_argument(
        "--semicircle-figure",
        choices=SEMICIRCLE_FIGURES,
        default=DEFAULT_OPTIONS.semicircle_figure,
        help="semicircle_triangle full image: arc (the semicircle on AB drawn) or triangle",
    )
    parser.add_argument(
        "--grid-step",
        type=_grid_step,
        default=DEFAULT_OPTIONS.grid_step,
        help="grid line spacing of the images in units: 0.5 (the paper's 'grid step in "
        "visualizations', equal to its answer tolerance) or 1",
    )


def options_from_args(args: argparse.Namespace) -> GeneratorOptions:
    """The GeneratorOptions `add_option_arguments` read from the command line."""
    return GeneratorOptions(
        variants=args.variants,
        semicircle_prompt=args.semicircle_prompt,
        semicircle_figure=args.semicircle_figure,
        grid_step=args.grid_step,
    )


MANIFEST_SHAPES: dict[str, type] = {"tasks": list, "setups": list, "per_task": int}


def read_manifest(
    items: Location, flag: str = "--items", keys: tuple[str, ...] = ("tasks", "setups")
) -> dict[str, Any]:
    """The manifest of an item directory; missing, not UTF-8, malformed or lacking the
    `keys` the caller reads is a UsageError naming the file."""
    path = items / MANIFEST
    if not path.is_file():
        raise UsageError(f"{flag} {items} holds no item table (no {MANIFEST}); run `generate`")
    manifest = read_json_object(path, f"{flag} manifest", keys)
    wrong = [k for k in keys if not isinstance(manifest[k], MANIFEST_SHAPES.get(k, object))]
    if wrong:
        raise UsageError(f"{flag} manifest {path} has malformed {', '.join(wrong)}; regenerate it")
    return manifest


def check_item_shards(
    files: list[Location],
    manifest: dict[str, Any],
    tasks: list[str],
    needed: tuple[str, ...] = (),
    flag: str = "--items",
) -> None:
    """The shards of the run's `tasks` are all there, readable, typed as ITEM_SCHEMA (with
    the `needed` columns) and the ones the manifest hashed: the sha256 of each file's bytes
    (SHARD_FILES) where the manifest records it, else the content hash of its rows (older
    item tables: reads them whole). A UsageError names the first file that fails, before
    Ray starts: a rewritten answer was scored against silently, a missing shard dropped
    its task silently, a wrongly typed column crashed inside Ray."""
    by_name = {path.name: path for path in files}
    for task in tasks:
        name = f"part-{task}.parquet"
        path = by_name.get(name)
        if path is None:
            raise UsageError(f"{flag} shard {name} of task {task} is missing; run `generate`")
        try:
            with parquet_file(path) as f:
                schema = f.schema_arrow
        except (OSError, pa.ArrowException) as err:
            raise UsageError(f"{flag} shard {path} is not a readable item table: {err}") from err
        wrong = wrong_types(schema, ITEM_SCHEMA)
        lacking = [c for c in needed if c not in schema.names]
        if wrong or lacking:
            what = "; ".join(wrong + [f"no column {c}" for c in lacking])
            raise UsageError(f"{flag} shard {path} does not hold item rows: {what}; regenerate it")
        _check_hash(path, manifest, flag)


def _check_hash(path: Location, manifest: dict[str, Any], flag: str) -> None:
    files, contents = manifest.get(SHARD_FILES) or {}, manifest.get("shards") or {}
    if path.name in files:
        found, recorded = hashlib.sha256(path.read_bytes()).hexdigest(), files[path.name]
    elif path.name in contents:
        with parquet_file(path) as f:
            found, recorded = content_hash(f.read()), contents[path.name]
    else:
        raise UsageError(f"{flag} shard {path} is not in {MANIFEST}; run `generate` again")
    if found != recorded:
        raise UsageError(
            f"{flag} shard {path} differs from what {MANIFEST} records (sha256 {found[:16]}, "
            f"recorded {str(recorded)[:16]}): it was changed after `generate`; regenerate it"
        )


def parse_list(value: str, valid: list[str] | tuple[str, ...], what: str) -> list[str]:
    """Split a comma-separated option; a bad entry is a UsageError naming the valid ones."""
    if value == "all":
        return list(valid)
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in chosen if v not in valid]
    if bad or not chosen:
        hint = did_you_mean(bad[0], valid) if bad else ""
        raise UsageError(
            f"unknown {what} {','.join(bad) or repr(value)}{hint}; valid: {', '.join(valid)}"
        )
    # Refused, not merged: a repeated task was generated twice and counted twice in the
    # manifest, and the user may have meant another ID.
    repeated = sorted({v for v in chosen if chosen.count(v) > 1})
    if repeated:
        raise UsageError(f"{what} {','.join(repeated)} given more than once in {value!r}")
    return chosen


def item_table(items: list[Item]) -> pa.Table:
    """Items as an Arrow table of ITEM_SCHEMA."""
    return pa.Table.from_pylist([i.to_row() for i in items], schema=ITEM_SCHEMA)


def content_hash(table: pa.Table) -> str:
    """sha256 of the rows' values (images by their own sha256), independent of Parquet bytes."""
    digest = hashlib.sha256()
    for row in table.to_pylist():
        image = row.pop("image")
        row["image_sha256"] = hashlib.sha256(image).hexdigest() if image is not None else None
        digest.update(json.dumps(row, sort_keys=True).encode())
    return digest.hexdigest()


class TaskShardWriter:
    """Ray Data step: task IDs in, one written shard summary per task out."""

    def __init__(
        self,
        out: str,
        per_task: int,
        seed: int,
        setups: list[str],
        image_size: int,
        options: dict[str, Any] | None = None,
    ):
        self.out = location(out)
        self.per_task, self.seed, self.setups, self.size = per_task, seed, setups, image_size
        self.options = GeneratorOptions(**options) if options else DEFAULT_OPTIONS
        self.render = functools.partial(render_png, grid_step=self.options.grid_step)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, list[Any]]:
        """Generate and write each task of the batch; one summary row per task."""
        summaries: dict[str, list[Any]] = {
            "task": [], "rows": [], "sha256": [], "file_sha256": [], "labels": []
        }  # fmt: skip
        for task_id in batch["task"]:
            items = build_items(
                str(task_id),
                self.per_task,
                self.seed,
                self.setups,
                self.size,
                self.render,
                self.options,
            )
            table = item_table(items)
            data = parquet_bytes(table)
            write_bytes_atomic(self.out / f"part-{task_id}.parquet", data)
            labels = Counter(
                json.loads(i.answer).get("answer") for i in items if i.setup == self.setups[0]
            )
            summaries["task"].append(str(task_id))
            summaries["rows"].append(table.num_rows)
            summaries["sha256"].append(content_hash(table))
            summaries["file_sha256"].append(hashlib.sha256(data).hexdigest())
            summaries["labels"].append(
                json.dumps({str(k): v for k, v in labels.items() if k is not None})
            )
        return summaries


def check_out_dir(out: Location) -> None:
    """UsageError when `--out` names a file."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a directory")


def run(args: argparse.Namespace) -> int:
    """Run `generate` with parsed options; the exit code."""
    tasks = select_tasks(args.tasks, list(all_tasks()))
    setups = parse_list(args.setups, SETUPS, "setups")
    check_out_dir(args.out)
    manifest = generate(
        args.out,
        tasks,
        args.per_task,
        args.item_seed,
        setups,
        args.image_size,
        options_from_args(args),
    )
    print(
        f"wrote {manifest['rows']} rows to {args.out} "
        f"(content sha256 {manifest['content_sha256'][:16]})"
    )
    return 0


def generate(
    out: Location,
    tasks: list[str],
    per_task: int,
    seed: int,
    setups: list[str],
    image_size: int,
    options: GeneratorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    """Write the item shards and manifest; returns the manifest."""
    import ray

    from pipelines.engines.session.ray_session import ensure_ray

    ensure_ray()
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(SHARD_GLOB):  # a previous run with other --tasks leaves none behind
        if stale.name not in {f"part-{t}.parquet" for t in tasks}:
            stale.unlink()
    task_rows = ray.data.from_items([{"task": t} for t in tasks], override_num_blocks=len(tasks))
    ds = task_rows.map_batches(
        TaskShardWriter,
        fn_constructor_kwargs={
            "out": str(out.resolve()),
            "per_task": per_task,
            "seed": seed,
            "setups": setups,
            "image_size": image_size,
            "options": options.as_dict(),
        },
        batch_size=1,
        num_cpus=1,
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=len(tasks)),
    )
    shown = Progress(len(tasks), "generate", "task")  # a task's shard is the unit written
    written = []
    try:
        for shard in ds.iter_rows():
            written.append(shard)
            shown.update(1)
    finally:
        shown.close()
    shards = sorted(written, key=lambda s: tasks.index(s["task"]))
    manifest = build_manifest(shards, tasks, per_task, seed, setups, image_size, options)
    write_bytes_atomic(out / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    return manifest


def build_manifest(
    shards: list[dict[str, Any]],
    tasks: list[str],
    per_task: int,
    seed: int,
    setups: list[str],
    image_size: int,
    options: GeneratorOptions = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    """The item table's manifest: tasks, setups, generator options, counts and content
    hashes of its shards."""
    combined = hashlib.sha256("".join(s["sha256"] for s in shards).encode()).hexdigest()
    return {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "per_task": per_task,
        "setups": setups,
        "image_size": image_size,
        "options": options.as_dict(),
        "tasks": tasks,
        "rows": sum(int(s["rows"]) for s in shards),
        "counts": {s["task"]: {setup: per_task for setup in setups} for s in shards},
        "labels": {s["task"]: json.loads(s["labels"]) for s in shards},
        "shards": {f"part-{s['task']}.parquet": s["sha256"] for s in shards},
        SHARD_FILES: {f"part-{s['task']}.parquet": s["file_sha256"] for s in shards},
        "content_sha256": combined,
    }
