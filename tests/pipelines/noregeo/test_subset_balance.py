"""`evaluate --per-task N` says in one line when its subset's gold labels are not balanced.

The item tables here are written from `build_items` without Ray; labels are read back from
the rows' `answer` column, independent of how the generator chose them."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from geometry.items import build_items
from pipelines.noregeo.generate import item_table
from pipelines.noregeo.subset_balance import balance_line
from store.storage import Location, location

TASKS = ["C-BCT-CT", "N-SCP-TTT", "U-PAP-PT", "U-RLT-SLT", "N-BCT-PAT"]


def _table(tmp_path: Path, per_task: int, reorder: bool = False) -> list[Location]:
    files = []
    for task in TASKS:
        items = list(build_items(task, per_task, 0, ("text",), 64, None))
        if reorder and task == "C-BCT-CT":
            # An item table in which a task's first items share a label (what a whole-task
            # shuffle could draw): the prefix is uneven though the task is balanced.
            by_label = sorted(items, key=lambda i: json.loads(i.answer)["answer"])
            ids = [i.item_id for i in items]
            items = [dataclasses.replace(i, item_id=n) for i, n in zip(by_label, ids, strict=True)]
        path = tmp_path / f"part-{task}.parquet"
        pq.write_table(item_table(items), path)
        files.append(location(str(path)))
    return files


def _gold(paths: list[Path], per_task: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in paths:
        for row in pq.read_table(path).to_pylist():
            if int(row["item_id"].rsplit("-", 1)[1]) < per_task and row["options"]:
                counts[str(json.loads(row["answer"])["answer"])] += 1
    return counts


def test_one_item_per_task_splits_the_pairs_and_says_so(tmp_path: Path) -> None:
    files = _table(tmp_path, 4)
    line = balance_line(files, TASKS, ["text"], 1)
    assert line is not None and "\n" not in line
    assert "--per-task 1 is not label-balanced" in line
    assert "2 task(s) (U-PAP-PT, U-RLT-SLT)" in line  # both paired tasks, no other
    yes_no_items = 2  # C-BCT-CT's and U-PAP-PT's first item
    gold = _gold([tmp_path / f"part-{t}.parquet" for t in ("C-BCT-CT", "U-PAP-PT")], 1)
    assert f"gold 'yes' on {gold['yes']} of {yes_no_items} yes/no items" in line


def test_an_even_subset_of_a_generated_table_is_balanced(tmp_path: Path) -> None:
    files = _table(tmp_path, 12)
    for n in (2, 4, 6, 12):
        assert balance_line(files, TASKS, ["text"], n) is None
    assert balance_line(files, TASKS, ["text"], None) is None


def test_an_uneven_prefix_of_another_table_is_named(tmp_path: Path) -> None:
    files = _table(tmp_path, 4, reorder=True)
    line = balance_line(files, TASKS, ["text"], 2)
    assert line is not None
    assert "uneven gold labels in 1 task(s) (C-BCT-CT)" in line
    assert "U- pair" not in line
