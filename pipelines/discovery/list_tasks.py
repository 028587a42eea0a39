"""`geosee list-tasks`: the 25 NoReGeo tasks, each with its answer format and an example prompt."""

from __future__ import annotations

import argparse
from typing import Any

from geometry.items import build_items
from geometry.tasks.registry import all_tasks
from pipelines.terminal.output import add_format_argument, print_rows

COLUMNS = ("id", "name", "category", "kind", "answer_type", "options", "example_prompt")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `list-tasks` command's options."""
    add_format_argument(parser)


def task_rows() -> list[dict[str, Any]]:
    """One row per task, in the paper's order; the example is item 0 of seed 0, text setup."""
    rows = []
    for task_id, task in all_tasks().items():
        (example,) = build_items(task_id, 1, seed=0, setups=["text"])
        rows.append(
            {
                "id": task_id,
                "name": task.name,
                "category": task.category,
                "kind": task.kind,
                "answer_type": task.answer_type,
                "options": list(task.options),
                "example_prompt": example.prompt,
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    """Print the task table; the exit code."""
    print_rows(task_rows(), COLUMNS, args.format)
    return 0
