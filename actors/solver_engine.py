"""The `solver` engine for GeoBuild: replies with the constructibility solver's program.

An upper bound for the agent loop: it solves each problem numerically (geometry/dsl/
solver.py) and answers every round with the same validated program, or with nothing when
no construction was found. Solutions are cached per problem, so later rounds are free.

Given a `geobuild-solve` results root instead of a data set, it replies with the programs
that audit persisted (no solving), and solves only the problems the audit lacks, from the
data file the audit recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from actors.contract import check_columns, with_outputs


class SolverEngine:
    """Ray Data step: the solver's program for each row's problem (`problem_id`)."""

    def __init__(self, dataset: str, restarts: int = 8) -> None:
        from store.solver_audit import audit_programs, find_audit

        self.programs: dict[str, str | None] = {}
        audit = find_audit(Path(dataset))
        if audit is not None:
            dataset, self.programs = audit_programs(audit)
        self.dataset = dataset
        self.restarts = restarts
        self._problems: dict[str, Any] | None = None  # loaded only when one must be solved

    def program(self, problem_id: str) -> str | None:
        """The solver's validated program for a problem (None if unsolved); solved once."""
        from geometry.dsl.dataset import load_problems
        from geometry.dsl.solver import solve_problem

        if problem_id not in self.programs:
            if self._problems is None:
                self._problems = {p.id: p for p in load_problems(self.dataset)}
            problem = self._problems.get(problem_id)
            result = solve_problem(problem, self.restarts) if problem is not None else None
            solved = result is not None and result.status == "solved"
            self.programs[problem_id] = result.program if solved and result else None
        return self.programs[problem_id]

    def reply(self, problem_id: str) -> str:
        """The program fenced as a model would write it; empty if unsolved."""
        program = self.program(problem_id)
        return f"```\n{program}\n```" if program else ""

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every input column plus ENGINE_OUTPUT, each reply the solver's program."""
        check_columns(batch, ("problem_id",), "SolverEngine")
        return with_outputs(batch, [self.reply(str(p)) for p in batch["problem_id"]])
