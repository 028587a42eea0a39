"""Which GeoBuild problems a run covers: `--ids`, `--first`, or a stratified sample by an
earlier run's outcomes. Light to import (no polars, no Ray): the solver's worker processes
use it too."""

from __future__ import annotations

from geometry.dsl.dataset import Problem
from store.errors import UsageError


def select_problems(problems: list[Problem], ids: str | None, limit: int | None) -> list[Problem]:
    """The problems a run covers: `--ids` (in data order), then the first `--first`."""
    if limit is not None and limit < 1:
        raise UsageError(f"--first must be at least 1, got {limit}")
    chosen = problems
    if ids is not None:
        wanted = [i.strip() for i in ids.split(",") if i.strip()]
        repeated = sorted({i for i in wanted if wanted.count(i) > 1})
        if repeated:  # as --tasks and --setups refuse theirs: a typo, or a count expected
            raise UsageError(f"--ids names {', '.join(repeated[:10])} more than once")
        known = {p.id for p in problems}
        unknown = [i for i in wanted if i not in known]
        if unknown or not wanted:
            raise UsageError(f"--ids not in the data set: {', '.join(unknown[:10]) or ids!r}")
        chosen = [p for p in problems if p.id in set(wanted)]
    return chosen[:limit] if limit is not None else chosen


def stratified_problems(problems: list[Problem], prior: str, n: int, seed: int) -> list[Problem]:
    """The stratified sample of `problems` (in data order) by an earlier run's outcomes."""
    from pipelines.geobuild.stratified import prior_outcomes, stratified_ids

    known = {p.id for p in problems}
    outcomes = {pid: ok for pid, ok in prior_outcomes(prior).items() if pid in known}
    if not outcomes:
        raise UsageError(f"--stratify-from {prior}: none of its problems are in this selection")
    picked = set(stratified_ids(outcomes, n, seed))
    solved = sum(outcomes[pid] for pid in picked)
    print(f"stratified sample: {len(picked)} problem(s), {solved} solved in {prior}")
    return [p for p in problems if p.id in picked]
