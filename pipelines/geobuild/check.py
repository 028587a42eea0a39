"""`python -m pipelines geobuild-check`: execute and validate GeoBuild programs.

Reads `{"id": ..., "dsl": ...}` lines, runs each program through the DSL executor, judges
the resulting scene against the problem, and prints one JSON verdict per input line, in
input order. A bad line (malformed JSON, unknown id, missing program) yields a verdict with
an `error`, never a crash; a program that stops with an error is judged on what it built.
`success` is our rule (every object and condition); `success_public`, `object_score_public`
and `condition_score_public` are the public validator's verdict and scores, reproduced by
geometry/dsl/public_judge.py; neither verdict holds for a program that stopped with an error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from geometry.dsl.dataset import Problem
from geometry.dsl.executor import execute
from geometry.dsl.public_judge import public_verdict
from geometry.dsl.validator import validate
from pipelines.command_line.args import existing_file, read_utf8
from pipelines.geobuild.dataset_args import add_dataset_arguments, load_dataset


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `geobuild-check` command's options."""
    add_dataset_arguments(parser)
    parser.add_argument(
        "--programs",
        required=True,
        type=existing_file,
        help='JSONL file of {"id": ..., "dsl": ...} lines',
    )


def run(args: argparse.Namespace) -> int:
    """Print one verdict per program line; exit 0 even when programs fail (they are data)."""
    # Read whole before the first verdict: a byte that is not UTF-8 halfway down the file
    # is a usage error, not a traceback after half the verdicts.
    lines = read_utf8(Path(args.programs), "--programs").split("\n")
    problems = {p.id: p for p in load_dataset(args.dataset, args.lang)}
    for verdict in check_lines(lines, problems):
        print(json.dumps(verdict, ensure_ascii=False))
    sys.stdout.flush()
    return 0


def check_lines(lines: Iterable[str], problems: dict[str, Problem]) -> Iterator[dict[str, object]]:
    """One verdict dict per non-blank input line, in order."""
    for number, text in enumerate(lines, start=1):
        if text.strip():
            yield check_line(text, number, problems)


def check_line(text: str, number: int, problems: dict[str, Problem]) -> dict[str, object]:
    """The verdict for one `{"id", "dsl"}` line; problems with the line itself go in `error`."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        return _error_verdict(None, f"line {number}: not JSON ({err.msg})")
    if not isinstance(record, dict):
        return _error_verdict(None, f"line {number}: expected a JSON object")
    problem_id = None if record.get("id") is None else str(record["id"])
    problem = problems.get(problem_id) if problem_id is not None else None
    if problem is None:
        return _error_verdict(problem_id, f"line {number}: unknown problem id {problem_id!r}")
    program = record.get("dsl")
    if not isinstance(program, str):
        return _error_verdict(problem_id, f"line {number}: 'dsl' must be a string")
    execution = execute(program)
    verdict = validate(problem, execution.scene)
    public = public_verdict(problem, program)
    error = execution.error
    return {
        "id": problem.id,
        "success": verdict.success and error is None,
        # The public verdict (geometry/dsl/public_judge.py): the public validator's own
        # checks; it judges only programs the public executor runs to the end.
        "success_public": public.success,
        "object_score_public": public.object_score,
        "condition_score_public": public.condition_score,
        "object_score": verdict.object_score,
        "condition_score": verdict.condition_score,
        "missing_objects": list(verdict.missing_objects),
        "failed_conditions": [
            {"type": f.type, "reason": f.reason} for f in verdict.failed_conditions
        ],
        "execution_error": None
        if error is None
        else {"line": error.line, "category": str(error.category), "message": error.message},
        "data_errors": list(problem.data_errors),
        "error": None,
    }


def _error_verdict(problem_id: str | None, message: str) -> dict[str, object]:
    return {
        "id": problem_id,
        "success": False,
        "success_public": False,
        "object_score_public": 0.0,
        "condition_score_public": 0.0,
        "object_score": 0.0,
        "condition_score": 0.0,
        "missing_objects": [],
        "failed_conditions": [],
        "execution_error": None,
        "data_errors": [],
        "error": message,
    }
