"""`geosee show-item ID`: one item as a model sees it (each setup's prompt, the image written to
a file) and as the scorer sees it (answer, options, geometry).

From an item table (`--items`, what a run evaluated) or, without one, generated again from
`--per-task` and `--item-seed` (the same item as `generate` with those values makes: an item's
label depends on how many items its task has, so both must match).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from geometry.item import IMAGE_SETUPS, SETUPS
from geometry.items import build_items, task_draws
from geometry.render import render_png
from geometry.tasks.registry import all_tasks
from pipelines.command_line.args import (
    any_location,
    image_size_int,
    output_dir,
    per_task_int,
    seed_int,
)
from pipelines.noregeo.generate import MIN_IMAGE_SIZE, read_manifest
from pipelines.terminal.output import FORMATS
from pipelines.terminal.suggest import did_you_mean
from store.errors import UsageError
from store.storage import Location, read_table

SHOWN = ("item_id", "task", "task_name", "category", "answer_type", "options", "answer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `show-item` command's options."""
    parser.add_argument("item_id", metavar="ID", help="an item ID, e.g. C-BCT-CT-0003")
    parser.add_argument(
        "--items",
        type=any_location,
        default=None,
        help="item table from `generate` to read the item from (default: generate it again)",
    )
    parser.add_argument(
        "--per-task",
        type=per_task_int,
        default=100,
        help="without --items: items per task of the generation (default 100, as generate)",
    )
    parser.add_argument(
        "--item-seed",
        type=seed_int,
        default=0,
        help="without --items: the items' seed of the generation (default 0, as generate)",
    )
    parser.add_argument(
        "--image-size",
        type=image_size_int(MIN_IMAGE_SIZE),
        default=448,
        help="without --items: image side in pixels (default 448, as generate)",
    )
    parser.add_argument(
        "--out",
        type=output_dir,
        default=Path("."),
        help="folder for the images, <ID>-dotted.png and <ID>-full.png (default: here)",
    )
    parser.add_argument(
        "--format", choices=FORMATS[:2], default="table", help="table or json (default: table)"
    )


def item_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The item's rows, one per setup, as the item table holds them."""
    task_id, index = _parse_id(args.item_id)
    if args.items is not None:
        return _from_table(args.items, task_id, args.item_id)
    if index >= args.per_task:
        raise UsageError(
            f"{args.item_id}: index {index} is beyond --per-task {args.per_task}; "
            "give the --per-task of the generation"
        )
    rows = [i.to_row() for i in build_items(task_id, args.per_task, args.item_seed)]
    chosen = [r for r in rows if r["item_id"] == args.item_id]
    draw = task_draws(task_id, args.per_task, args.item_seed)[index][0]
    for row in chosen:  # rendered only for this item: a task's 100 would take seconds
        if row["setup"] in IMAGE_SETUPS:
            row["image"] = render_png(draw, row["setup"], args.image_size)
    return chosen


def _parse_id(item_id: str) -> tuple[str, int]:
    """The task and index an item ID names: `<task>-<index, 4 digits>`."""
    task_id, _, number = item_id.rpartition("-")
    well_formed = number.isdigit() and len(number) == 4
    if well_formed and task_id not in all_tasks():
        raise UsageError(
            f"item ID {item_id!r}: unknown task {task_id!r}"
            f"{did_you_mean(task_id, all_tasks())}; `list-tasks` shows the task IDs"
        )
    if not well_formed:
        raise UsageError(
            f"item ID {item_id!r} is not <task>-<4-digit index>, e.g. C-BCT-CT-0003; "
            "`list-tasks` shows the task IDs"
        )
    return task_id, int(number)


def _from_table(items: Location, task_id: str, item_id: str) -> list[dict[str, Any]]:
    manifest = read_manifest(items)
    if task_id not in manifest["tasks"]:
        raise UsageError(f"--items {items} has no task {task_id}")
    table = read_table(items / f"part-{task_id}.parquet")
    rows = table.filter(pc.equal(table["item_id"], item_id)).to_pylist()
    if not rows:
        raise UsageError(f"--items {items} has no item {item_id}")
    order = {s: i for i, s in enumerate(SETUPS)}
    return sorted(rows, key=lambda r: order[r["setup"]])


def run(args: argparse.Namespace) -> int:
    """Print the item and write its images; the exit code."""
    rows = item_rows(args)
    images = {}
    if any(row.get("image") is not None for row in rows):
        args.out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        if row.get("image") is not None:
            path = args.out / f"{row['item_id']}-{row['setup']}.png"
            path.write_bytes(row["image"])
            images[row["setup"]] = str(path)
    first = rows[0]
    shown: dict[str, Any] = {k: first[k] for k in SHOWN}
    shown["geometry"] = json.loads(first["geometry"])
    shown["prompts"] = {r["setup"]: r["prompt"] for r in rows}
    shown["images"] = images
    if args.format == "json":
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    for key in SHOWN:
        value = shown[key]
        print(f"{key}: {', '.join(value) if isinstance(value, list) else value}")
    print(f"geometry: {json.dumps(shown['geometry'])}")
    for setup, prompt in shown["prompts"].items():
        print(f"\n[{setup}] {prompt}")
        if setup in images:
            print(f"[{setup}] image: {images[setup]}")
    return 0
