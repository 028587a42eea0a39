"""`python -m pipelines geobuild-solve`: constructibility audit of the GeoBuild data set.

Runs the least-squares solver (geometry/dsl/solver.py) on every problem, in worker
processes, and writes two files, each atomically and only once every problem is done:

- `DIR/programs.jsonl`: `{"id", "dsl"}` per solved problem, in data-set order; the programs
  pass `python -m pipelines geobuild-check` (reference programs, an upper-bound baseline);
- `DIR/audit.csv`: id, status (solved / no_construction / data_error), conflicts (the
  conditions that cannot hold together, ` | `-separated), reason, restarts, residual,
  seconds.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from geometry.dsl.dataset import Problem
from geometry.dsl.solver import Budget, SolveResult, solve_problem
from pipelines.cli_args import output_dir, positive_float, positive_int
from pipelines.geobuild.dataset_args import add_dataset_arguments, load_dataset
from store.atomic import write_bytes_atomic
from store.errors import UsageError

AUDIT_COLUMNS = ("id", "status", "conflicts", "reason", "restarts", "residual", "seconds")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `geobuild-solve` command's options."""
    add_dataset_arguments(parser)
    # A file here used to fail only after every problem was solved.
    parser.add_argument(
        "--out", required=True, type=output_dir, help="directory for programs.jsonl and audit.csv"
    )
    parser.add_argument("--ids", nargs="+", help="solve only these problem ids (default: all)")
    parser.add_argument(
        "--restarts", type=positive_int, default=8, help="random starts per problem"
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="worker processes (1: run in this process)",
    )
    parser.add_argument(
        "--solve-seconds",
        type=positive_float,
        default=Budget.solve_seconds,
        help="per problem: no new start after this many seconds",
    )
    parser.add_argument(
        "--conflict-seconds",
        type=positive_float,
        default=Budget.conflict_seconds,
        help="per unsolved problem: time for the search for conflicting conditions",
    )


@dataclass(frozen=True)
class Timed:
    """A solver result and the seconds it took."""

    result: SolveResult
    seconds: float


def run(args: argparse.Namespace) -> int:
    """Solve the selected problems, write programs.jsonl and audit.csv, print the counts."""
    problems = _select(load_dataset(args.dataset, args.lang), args.ids)
    budget = Budget(args.solve_seconds, args.conflict_seconds)
    started = time.monotonic()
    bar = tqdm(total=len(problems), desc="geobuild-solve", unit="problem")
    results: list[Timed] = []
    for timed in solve_all(problems, args.restarts, budget, args.workers):
        results.append(timed)
        bar.update(1)
    bar.close()
    out = Path(args.out)
    write_bytes_atomic(out / "programs.jsonl", programs_jsonl(results))
    write_bytes_atomic(out / "audit.csv", audit_csv(results))
    counts = Counter(t.result.status for t in results)
    shown = ", ".join(f"{status} {counts[status]}" for status in _STATUSES)
    print(f"{len(results)} problems: {shown} ({time.monotonic() - started:.1f} s); wrote {out}")
    return 0


_STATUSES = ("solved", "no_construction", "data_error")


def _select(problems: list[Problem], ids: Sequence[str] | None) -> list[Problem]:
    if not ids:
        return problems
    known = {p.id for p in problems}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise UsageError(f"--ids: no problem with id {', '.join(unknown)} in the data set")
    wanted = set(ids)
    return [p for p in problems if p.id in wanted]


def solve_all(
    problems: Sequence[Problem], restarts: int, budget: Budget, workers: int
) -> Iterator[Timed]:
    """Results in the problems' order; `workers` > 1 spreads them over processes."""
    jobs = [(p, restarts, budget) for p in problems]
    if workers == 1 or len(problems) <= 1:
        yield from map(_solve_timed, jobs)
        return
    with ProcessPoolExecutor(max_workers=min(workers, len(problems))) as pool:
        yield from pool.map(_solve_timed, jobs)


def _solve_timed(job: tuple[Problem, int, Budget]) -> Timed:
    problem, restarts, budget = job
    started = time.monotonic()
    result = solve_problem(problem, restarts, budget)
    return Timed(result, time.monotonic() - started)


def programs_jsonl(results: Sequence[Timed]) -> bytes:
    """One `{"id", "dsl"}` line per solved problem, in the order given."""
    lines = [
        json.dumps({"id": t.result.problem_id, "dsl": t.result.program}, ensure_ascii=False)
        for t in results
        if t.result.program is not None
    ]
    return "".join(line + "\n" for line in lines).encode("utf-8")


def audit_csv(results: Sequence[Timed]) -> bytes:
    """The audit table: one row per problem, columns AUDIT_COLUMNS."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(AUDIT_COLUMNS)
    for t in results:
        r = t.result
        writer.writerow(
            [
                r.problem_id,
                r.status,
                " | ".join(r.conflicts),
                r.reason,
                r.restarts,
                f"{r.residual:.3g}",
                f"{t.seconds:.2f}",
            ]
        )
    return buffer.getvalue().encode("utf-8")
