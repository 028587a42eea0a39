"""`--tasks` as lm-eval users write it: task ids (`C-BCT-CT`), names as `list-tasks` prints
them (`collinearity`), id prefixes for a kind or category (`N-`, `C-BCT`), or `all`.

Every word must select at least one task of the item table, and no task may be selected
twice (`C-BCT,C-BCT-CT`): both are one line, exit 2, before anything is written (issue 39:
`--tasks collinearity` and `--tasks C-BCT` used to be unknown task ids).
"""

from __future__ import annotations

from collections.abc import Sequence

from geometry.tasks.registry import all_tasks
from pipelines.terminal.suggest import did_you_mean
from store.errors import UsageError

TASKS_HELP = (
    "comma-separated task ids (C-BCT-CT), names as list-tasks prints them (collinearity), "
    "categories as id prefixes (C-BCT, N-), or all"
)


def _selects(word: str, task_id: str, name: str | None) -> bool:
    """Whether `word` names the task: its id, its name, or a prefix of its id that ends at
    a dash (`N-`, `C-BCT`; `C-B` is no category)."""
    folded = word.casefold()
    if folded in (task_id.casefold(), (name or "").casefold()):
        return True
    prefix = folded if folded.endswith("-") else f"{folded}-"
    return task_id.casefold().startswith(prefix)


def select_tasks(value: str, valid: Sequence[str], where: str = "") -> list[str]:
    """The task ids of `valid` that `value` selects, in the order its words give them (each
    word's tasks in `valid`'s order). UsageError for a word that selects nothing (naming the
    closest ids and names), a word given twice or a task selected twice.

    `where` names what `valid` comes from (an item folder) for the message."""
    if value.strip() == "all":
        return list(valid)
    names = {task_id: task.name for task_id, task in all_tasks().items()}
    words = [w.strip() for w in value.split(",") if w.strip()]
    if not words:
        raise UsageError(f"--tasks {value!r} selects no task; give ids, names, categories or all")
    repeated = sorted({w for w in words if words.count(w) > 1})
    if repeated:  # refused, not merged: the user may have meant another task
        raise UsageError(f"task IDs {','.join(repeated)} given more than once in {value!r}")
    chosen: list[str] = []
    by: dict[str, str] = {}
    for word in words:
        picked = [t for t in valid if _selects(word, t, names.get(t))]
        if not picked and any(_selects(word, t, names[t]) for t in names):
            raise UsageError(
                f"--tasks {word} selects no task of {where or 'this run'}: it holds "
                f"{', '.join(valid)}"
            )
        if not picked:
            hint = did_you_mean(word, [*names, *names.values()])
            raise UsageError(
                f"unknown task IDs {word}{hint}; valid: {', '.join(valid)}, their names "
                f"(`geosee list-tasks`), categories as id prefixes (C-BCT, N-) or all"
            )
        for task_id in picked:
            if task_id in by:
                raise UsageError(
                    f"--tasks selects {task_id} twice (by {by[task_id]} and by {word})"
                )
            by[task_id] = word
            chosen.append(task_id)
    return chosen
