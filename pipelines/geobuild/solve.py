"""`python -m pipelines geobuild-solve`: constructibility audit of the GeoBuild data set.

Runs the least-squares solver (geometry/dsl/solver.py) on every problem, in worker
processes, under one results root: `--out RESULTS` writes `RESULTS/audit/`:

- `results.jsonl`: the journal, one record per problem appended (and fsynced) as soon as
  its solve finishes, in finishing order (store/journal.py). A killed run loses
  only the problems in flight; a rerun skips every problem already in the journal;
- `settings.json`: the data file's digest, language and solver settings; a rerun with other
  settings is refused (use another --out), since its results would be mixed with these;
- `programs.jsonl`: `{"id", "dsl"}` per solved problem, in data-set order; the programs
  pass `python -m pipelines geobuild-check` (reference programs, an upper-bound baseline);
- `audit.csv`: id, status (solved / no_construction / data_error), conflicts (the
  conditions that cannot hold together, ` | `-separated), reason, restarts, residual,
  seconds, success_public (the solver's program passes the public verdict,
  geometry/dsl/public_judge.py: the public executor runs it and the public validator's
  checks give both scores >= 0.9; false without a program) and
  broken_data (the problem's data has notes, `Problem.data_errors`: the problems the
  clean-data success rates leave out); one row per problem in the journal, in data-set
  order.

The last two are rebuilt atomically from the whole journal at the end of every run (also
one that solved nothing new), so they cover every problem solved in RESULTS so far.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geometry.dsl.dataset import Problem
from geometry.dsl.public_judge import public_verdict
from geometry.dsl.solver import MAX_NFEV, Budget, SolveResult, solve_problem
from pipelines.command_line.args import output_dir, positive_int, replicas_int
from pipelines.geobuild.dataset_args import add_dataset_arguments, load_dataset
from pipelines.geobuild.problem_selection import select_problems
from pipelines.terminal.progress import Progress
from store.atomic import write_bytes_atomic
from store.errors import UsageError
from store.journal import Journal, Record, read_journal
from store.run_lock import RunLock
from store.settings import check_settings, write_settings
from store.solver_audit import AUDIT_DIR, JOURNAL

AUDIT_COLUMNS = (
    "id",
    "status",
    "conflicts",
    "reason",
    "restarts",
    "residual",
    "seconds",
    "success_public",
    "broken_data",
)
# The settings that change a problem's result; a rerun must match them to resume.
RESULT_SETTINGS = ("dataset_sha256", "lang", "restarts", "conflict_steps")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `geobuild-solve` command's options."""
    add_dataset_arguments(parser)
    # A file here used to fail only after every problem was solved.
    parser.add_argument(
        "--out",
        required=True,
        type=output_dir,
        help="results root: writes OUT/audit/ (audit.csv, programs.jsonl, results.jsonl); "
        "a rerun resumes there",
    )
    parser.add_argument(
        "--ids", default=None, help="comma-separated problem ids to solve (default: all)"
    )
    parser.add_argument(
        "--restarts", type=positive_int, default=8, help="random starts per problem"
    )
    parser.add_argument(
        "--workers",
        type=replicas_int,
        default=os.cpu_count() or 1,
        help="worker processes (1: run in this process)",
    )
    parser.add_argument(
        "--conflict-steps",
        type=positive_int,
        default=Budget.conflict_steps,
        help="per unsolved problem: residual evaluations the search for conflicting "
        "conditions may spend (work, not seconds: the audit is the same at any load)",
    )


@dataclass(frozen=True)
class Timed:
    """A solver result and the seconds it took."""

    result: SolveResult
    seconds: float


def audit_dir(out: Path) -> Path:
    """Where `geobuild-solve --out OUT` writes: OUT/audit."""
    return out / AUDIT_DIR


def run(args: argparse.Namespace) -> int:
    """Solve the selected problems not yet in the journal, rebuild programs.jsonl and
    audit.csv from the whole journal, print the counts."""
    problems = load_dataset(args.dataset, args.lang)
    chosen = select_problems(problems, args.ids, None)
    root = audit_dir(Path(args.out))
    if root.exists() and not root.is_dir():
        raise UsageError(f"--out {args.out}: {root} is a file; give another --out")
    budget = Budget(args.conflict_steps)
    ours = run_settings(args)
    print(
        f"solver budget: {args.restarts} starts per problem (at most {MAX_NFEV} evaluations "
        f"per optimiser run), {budget.conflict_steps} steps of conflict search per unsolved "
        f"problem; no wall-clock limit, so the audit does not depend on the machine's load"
    )
    started = time.monotonic()
    with RunLock(root):
        check_settings(root, ours, RESULT_SETTINGS)
        write_settings(root, ours)
        done, torn = read_journal(root / JOURNAL, "id")
        todo = [p for p in chosen if p.id not in done]
        resumed = len(chosen) - len(todo)
        if resumed or torn:
            print(
                f"resuming {root / JOURNAL}: {resumed} of {len(chosen)} problems already "
                f"audited" + (f", {torn} torn line(s) skipped" if torn else "")
            )
        bar = Progress(len(chosen), "geobuild-solve", "problem", initial=resumed)
        with Journal(root / JOURNAL) as journal:
            for timed in solve_all(todo, args.restarts, budget, args.workers):
                journal.append(to_record(timed))
                bar.update(1)
        bar.close()
        records, _ = read_journal(root / JOURNAL, "id")
        ordered = [records[p.id] for p in problems if p.id in records]
        write_bytes_atomic(root / "programs.jsonl", programs_jsonl(ordered))
        write_bytes_atomic(root / "audit.csv", audit_csv(ordered, {p.id: p for p in problems}))
    counts = Counter(records[p.id]["status"] for p in chosen)
    shown = ", ".join(f"{status} {counts[status]}" for status in _STATUSES)
    print(
        f"{len(chosen)} problems ({len(todo)} audited now, {resumed} resumed): {shown} "
        f"({time.monotonic() - started:.1f} s); audit of {len(ordered)} in {root / 'audit.csv'}"
    )
    return 0


_STATUSES = ("solved", "no_construction", "data_error")


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What the results depend on: the data file (by digest; its path only for people),
    language and solver settings. Workers and --ids are not among them."""
    data = Path(args.dataset)
    if data.is_dir():
        data = data / f"geoqa3_dataset_{args.lang}.json"
    return {
        "dataset": str(data.resolve()),
        "dataset_sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
        "lang": args.lang,
        "restarts": args.restarts,
        "conflict_steps": args.conflict_steps,
    }


def solve_all(
    problems: Sequence[Problem], restarts: int, budget: Budget, workers: int
) -> Iterator[Timed]:
    """Results as they finish (not in the problems' order, so one slow problem does not hold
    back the persisting of later ones); `workers` > 1 spreads them over processes."""
    jobs = [(p, restarts, budget) for p in problems]
    if workers == 1 or len(problems) <= 1:
        yield from map(_solve_timed, jobs)
        return
    # forkserver: a fork would copy this process mid-heartbeat of the run lock's thread.
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=min(workers, len(problems)), mp_context=context) as pool:
        futures = [pool.submit(_solve_timed, job) for job in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:  # interrupted: start nothing more
                future.cancel()


def _solve_timed(job: tuple[Problem, int, Budget]) -> Timed:
    problem, restarts, budget = job
    started = time.monotonic()
    result = solve_problem(problem, restarts, budget)
    return Timed(result, time.monotonic() - started)


def to_record(timed: Timed) -> Record:
    """A journal record: the result's fields, the program and the seconds."""
    r = timed.result
    return {
        "id": r.problem_id,
        "status": r.status,
        "program": r.program,
        "conflicts": list(r.conflicts),
        "reason": r.reason,
        "restarts": r.restarts,
        "residual": r.residual,  # NaN/inf are written as JSON's NaN/Infinity; json reads them
        "seconds": round(timed.seconds, 3),
    }


def programs_jsonl(records: Sequence[Record]) -> bytes:
    """One `{"id", "dsl"}` line per solved problem, in the order given."""
    lines = [
        json.dumps({"id": r["id"], "dsl": r["program"]}, ensure_ascii=False)
        for r in records
        if r.get("program") is not None
    ]
    return "".join(line + "\n" for line in lines).encode("utf-8")


def audit_csv(records: Sequence[Record], problems: Mapping[str, Problem]) -> bytes:
    """The audit table: one row per problem, columns AUDIT_COLUMNS. `problems` (by id)
    gives each record's problem, to judge its program by the public rule."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(AUDIT_COLUMNS)
    for r in records:
        problem = problems[r["id"]]
        writer.writerow(
            [
                r["id"],
                r["status"],
                " | ".join(r["conflicts"]),
                r["reason"],
                r["restarts"],
                f"{float(r['residual']):.3g}",
                f"{float(r['seconds']):.2f}",
                _csv_bool(public_success(problem, r.get("program"))),
                _csv_bool(bool(problem.data_errors)),
            ]
        )
    return buffer.getvalue().encode("utf-8")


def public_success(problem: Problem, program: str | None) -> bool:
    """Whether `program` passes the public verdict for `problem` (geometry/dsl/public_judge.py:
    the public executor runs it, and the public validator's checks give both scores >= 0.9).
    Judged again here, not assumed from `solved`, so the column means what it says."""
    return program is not None and public_verdict(problem, program).success


def _csv_bool(value: bool) -> str:
    return "true" if value else "false"
