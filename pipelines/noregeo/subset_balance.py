"""Whether `evaluate --per-task N` keeps each task's gold labels balanced, said in one line.

A subset of a choice task answered by a model that always says "yes" scores that task's
share of "yes" labels. `generate` orders labels so that every prefix of a task is balanced
(geometry.items), but an odd N splits the U- tasks' pairs (a lone first member, gold "yes"
on the yes/no ones) and an item table of an older generator may hold any order. This counts
the labels of the subset the run will answer, from the item table, before Ray starts.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from geometry.tasks.registry import get_task
from pipelines.noregeo.evaluate_preflight import rows_in_run
from store.storage import Location, read_table

COLUMNS = ["item_id", "task", "setup", "answer", "pair_id"]


def subset_labels(
    files: list[Location], tasks: list[str], setups: list[str], limit: int
) -> tuple[dict[str, Counter[str]], dict[str, int]]:
    """Per choice task of the run: the gold labels of its first `limit` items, and how many
    U- pairs the subset holds one member of. Images are not read."""
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    members: dict[str, Counter[str]] = defaultdict(Counter)
    for path in files:
        rows = rows_in_run(read_table(path, COLUMNS), tasks, setups[:1], limit).to_pylist()
        for row in rows:
            if not get_task(row["task"]).options:
                continue
            labels[row["task"]][str(json.loads(row["answer"])["answer"])] += 1
            if row["pair_id"] is not None:
                members[row["task"]][row["pair_id"]] += 1
    split = {t: sum(n == 1 for n in m.values()) for t, m in members.items()}
    return dict(labels), {t: n for t, n in split.items() if n}


def unbalanced(labels: dict[str, Counter[str]]) -> list[str]:
    """Tasks whose subset's option counts differ by more than one (an option missing
    counts as 0)."""
    out = []
    for task, counts in labels.items():
        per_option = [counts.get(o, 0) for o in get_task(task).options]
        if max(per_option) - min(per_option) > 1:
            out.append(task)
    return sorted(out)


def balance_line(
    files: list[Location], tasks: list[str], setups: list[str], limit: int | None
) -> str | None:
    """One line when the run's subset is not label-balanced (split U- pairs or uneven
    option counts), naming the tasks and the gold "yes" share; None when it is."""
    if limit is None:
        return None
    labels, split = subset_labels(files, tasks, setups, limit)
    uneven = [t for t in unbalanced(labels) if t not in split]
    if not split and not uneven:
        return None
    yes_no: Counter[str] = Counter()
    for task, counts in labels.items():
        if set(get_task(task).options) == {"yes", "no"}:
            yes_no.update(counts)
    parts = []
    if split:
        parts.append(
            f"it holds one member of a U- pair in {len(split)} task(s) ({', '.join(sorted(split))})"
        )
    if uneven:
        parts.append(f"uneven gold labels in {len(uneven)} task(s) ({', '.join(uneven)})")
    yes_share = ""
    if sum(yes_no.values()):
        yes_share = f"; gold 'yes' on {yes_no['yes']} of {sum(yes_no.values())} yes/no items"
    hint = "an even --per-task keeps U- pairs whole" if split else "use the whole item table"
    return (
        f"note: --per-task {limit} is not label-balanced: {'; '.join(parts)}{yes_share}, so "
        f"an answerer of one label scores above chance there ({hint})"
    )
