"""The `solver` engine for GeoBuild: replies with the constructibility solver's program.

An upper bound for the agent loop: it solves each problem numerically (geometry/dsl/
solver.py) and answers every round with the same validated program, or with nothing when
no construction was found. Solutions are cached per problem, so later rounds are free.
"""

from __future__ import annotations

import numpy as np

from actors.contract import check_columns, with_outputs


class SolverEngine:
    """Ray Data step: the solver's program for each row's problem (`problem_id`)."""

    def __init__(self, dataset: str, restarts: int = 8) -> None:
        from geometry.dsl.dataset import load_problems

        self.problems = {p.id: p for p in load_problems(dataset)}
        self.restarts = restarts
        self.replies: dict[str, str] = {}

    def reply(self, problem_id: str) -> str:
        """The solver's program for a problem, fenced (empty if unsolved); solved once."""
        from geometry.dsl.solver import solve_problem

        if problem_id not in self.replies:
            problem = self.problems.get(problem_id)
            result = solve_problem(problem, self.restarts) if problem is not None else None
            program = result.program if result is not None and result.status == "solved" else None
            self.replies[problem_id] = f"```\n{program}\n```" if program else ""
        return self.replies[problem_id]

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every input column plus ENGINE_OUTPUT, each reply the solver's program."""
        check_columns(batch, ("problem_id",), "SolverEngine")
        return with_outputs(batch, [self.reply(str(p)) for p in batch["problem_id"]])
