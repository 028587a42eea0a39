"""GeoBuild error counts two ways: our final-round figures and the public per-step sums.

Ours count each problem once, at its final round. The public benchmark
(`DetailedMetrics.add_problem_result` in run_agent_benchmark.py, ooongs/GeoBuildBench
5a31908) sums over *every step* of every problem:

- a DSL error ("hallucination") is a step whose program failed to execute; here a round
  row with an error category other than `engine_error` (a failed model call ends a public
  problem without a step). A reply without a program counts: the public agent executes the
  reply itself, which its parser refuses;
- hallucinations per problem: that sum over the problems with at least one step;
- recovery steps: for each run of consecutive failing steps, the step number of the first
  step that executed again minus that of the run's first error, averaged over all runs
  (a run still failing at the last step adds nothing);
- missing objects and failed conditions: summed over every step that executed (the public
  agent validates only those), from the public verdict's own lists
  (`missing_objects_public`, `failed_conditions_public`); rows written before the public
  verdict was recorded count ours instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import polars as pl

from geometry.dsl.public_categories import ENGINE_ERROR

NONE_KINDS = ("none", "not_run", ENGINE_ERROR)  # final-round categories that are no DSL error

SCHEMA = {
    "model": pl.String,
    "problems": pl.Int64,
    "dsl_errors_final_ours": pl.Int64,
    "missing_objects_final_ours": pl.Int64,
    "failed_conditions_final_ours": pl.Int64,
    "dsl_errors_steps_public": pl.Int64,
    "hallucinations_per_problem_public": pl.Float64,
    "mean_recovery_steps_public": pl.Float64,
    "missing_objects_steps_public": pl.Int64,
    "failed_conditions_steps_public": pl.Int64,
}


def _verdict_counts(verdict: str | None, public: bool) -> tuple[int, int]:
    """(missing objects, failed conditions) of one verdict JSON, public or ours."""
    if not verdict:
        return 0, 0
    data = json.loads(verdict)
    if public and "failed_conditions_public" in data:
        return int(data.get("missing_objects_public", 0)), len(data["failed_conditions_public"])
    return len(data.get("missing_objects", [])), len(data.get("failed_conditions", []))


def recovery_steps(steps: Iterable[tuple[int, bool]]) -> list[int]:
    """Recoveries of one problem from (round, failed to execute) in round order."""
    recoveries, started = [], None
    for round_number, failed in steps:
        if failed and started is None:
            started = round_number
        elif not failed and started is not None:
            recoveries.append(round_number - started)
            started = None
    return recoveries


def error_accounting(outcomes: pl.DataFrame, rounds: pl.DataFrame) -> pl.DataFrame:
    """One row per model: our final-round counts beside the public per-step sums."""
    out = []
    for (model,), part in outcomes.group_by("model", maintain_order=True):
        final = [_verdict_counts(v, public=False) for v in part["verdict"].to_list()]
        steps = rounds.filter(
            (pl.col("model") == model)
            & (pl.col("error_category").is_null() | (pl.col("error_category") != ENGINE_ERROR))
        ).sort("problem_id", "round")
        failed = steps["error_category"].is_not_null()
        executed = steps.filter(~failed)
        public = [_verdict_counts(v, public=True) for v in executed["verdict"].to_list()]
        recoveries: list[int] = []
        stepped = 0
        for _, problem in steps.with_columns(failed=failed).group_by(
            "problem_id", maintain_order=True
        ):
            stepped += 1
            recoveries += recovery_steps(problem.select("round", "failed").iter_rows())
        errors = int(failed.sum())
        out.append(
            {
                "model": model,
                "problems": part.height,
                "dsl_errors_final_ours": int((~part["error_category"].is_in(NONE_KINDS)).sum()),
                "missing_objects_final_ours": sum(m for m, _ in final),
                "failed_conditions_final_ours": sum(f for _, f in final),
                "dsl_errors_steps_public": errors,
                "hallucinations_per_problem_public": errors / stepped if stepped else None,
                "mean_recovery_steps_public": sum(recoveries) / len(recoveries)
                if recoveries
                else None,
                "missing_objects_steps_public": sum(m for m, _ in public),
                "failed_conditions_steps_public": sum(f for _, f in public),
            }
        )
    return pl.DataFrame(out, schema=SCHEMA)
