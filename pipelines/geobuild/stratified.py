"""`--stratified-sample N --stratify-from PRIOR --sample-seed S`: the problems of the public
vision ablation (scripts/run_stratified_ablation.py of GeoBuildBench).

The public script reads an earlier run's per-problem outcome (its run_info.json), and draws
N problems, 70% from those the run solved and 30% from those it failed, with Python's
`random` seeded by the seed: `random.sample` of the solved, then of the failed, then one
shuffle. When a side has too few problems, the other side makes up the difference. Here the
earlier run is a `geobuild` results folder; a problem counts as solved under the rule that
run stopped on (its protocol, summarize.run_protocol), as its reported success counts it: a
public-protocol run's problem when one of its rows passed the public script's own rule (the
program ran, and object and condition scores are both >= 0.9), our loop's when one passed
ours (every object present, every condition holding).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl

from store.errors import UsageError

SUCCESS_SHARE = 0.7  # the public script's default --success-ratio


def prior_folder(path: str) -> Path:
    """The model folder of an earlier run: PATH itself when it holds rounds, else the one
    model folder under PATH/geobuild; UsageError naming --stratify-from otherwise."""
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"--stratify-from {path}: not a directory (an earlier geobuild --out)")
    if any(root.glob("round=*")):
        return root
    models = sorted((root / "geobuild").glob("model=*"))
    if len(models) != 1:
        found = ", ".join(m.name for m in models) or "none"
        raise UsageError(
            f"--stratify-from {path}: needs one geobuild model folder (found {found}); "
            "give RESULTS/geobuild/model=NAME"
        )
    return models[0]


def prior_outcomes(path: str) -> dict[str, bool]:
    """Problem id -> solved, from an earlier run's rows (see the module docstring)."""
    from pipelines.geobuild.summarize import run_protocol

    folder = prior_folder(path)
    public = run_protocol(folder) == "public"
    files = sorted(folder.glob("round=*/part-*.parquet"))
    if not files:
        raise UsageError(f"--stratify-from {path}: no result rows under {folder}")
    try:
        rows = pl.read_parquet(
            files, columns=["problem_id", "success", "error_category", "verdict"]
        )
    except (pl.exceptions.PolarsError, OSError) as err:
        raise UsageError(f"--stratify-from {path}: unreadable rows ({err})") from err
    solved: dict[str, bool] = {}
    for row in rows.iter_rows(named=True):
        if public:
            passed = row["error_category"] is None and _public_pass(row["verdict"])
        else:
            passed = bool(row["success"])
        solved[row["problem_id"]] = solved.get(row["problem_id"], False) or passed
    return solved


def _public_pass(verdict: str | None) -> bool:
    """The verdict's public rule (False for a verdict written before it was recorded)."""
    return bool(verdict) and bool(json.loads(verdict or "{}").get("success_public"))


def stratified_ids(
    outcomes: dict[str, bool], n: int, seed: int, share: float = SUCCESS_SHARE
) -> list[str]:
    """N problem ids, `share` of them solved in the earlier run, drawn as the public script
    draws them (see the module docstring), in the order drawn."""
    solved = [pid for pid, ok in outcomes.items() if ok]
    failed = [pid for pid, ok in outcomes.items() if not ok]
    n_solved = int(n * share)
    n_failed = n - n_solved
    if n_solved > len(solved):
        n_solved = len(solved)
        n_failed = n - n_solved
    if n_failed > len(failed):
        n_failed = len(failed)
        n_solved = min(n - n_failed, len(solved))
    draw = random.Random(seed)
    picked = draw.sample(solved, n_solved) + draw.sample(failed, n_failed)
    draw.shuffle(picked)
    return picked
