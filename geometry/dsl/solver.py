"""Constructibility solver: find coordinates satisfying a GeoBuild problem, or say what conflicts.

The unknowns are the coordinates of the problem's labelled points (plus a few auxiliary
unknowns, see solver_space); each condition is a residual that vanishes exactly when it holds
(solver_residuals). `scipy.optimize.least_squares` runs from several random starts seeded by
the problem id, so the same problem always gives the same answer. A start counts only when
the real validator accepts the figure its written program builds in the real executor.

When no start succeeds, a deletion filter looks for a small set of conditions that cannot
hold together: drop one condition at a time (least violated first); if the rest are still
unsatisfiable the condition is not needed to explain the failure. Satisfiability of a subset
is decided numerically with few starts and a work budget, so the set is approximately
minimal; when the budget runs out the set found so far is reported and the reason says so.

Every budget counts work, never seconds: the starts are bounded by their number and the
optimiser's evaluations, the conflict search by `Budget.conflict_steps`, evaluations of the
residual vector (one per value, one per finite-difference Jacobian column). A wall-clock
budget made the audit depend on the machine's load (455, 454 and 452 problems solved on the
same data, issue 26); a step budget gives the same result on any machine at any load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from geometry.dsl.dataset import Problem
from geometry.dsl.executor import execute
from geometry.dsl.solver_model import Model, Unsupported, build_model
from geometry.dsl.solver_program import write_program
from geometry.dsl.validator import validate

SOLVED, NO_CONSTRUCTION, DATA_ERROR = "solved", "no_construction", "data_error"
# A start whose largest residual is above this is not worth executing and validating.
VALIDATE_BELOW = 1e-4
# A subset of conditions counts as satisfiable when its largest residual falls below this.
SATISFIED_BELOW = 1e-6
# Optimiser evaluations per start (Jacobian evaluations not counted): bounds the work.
MAX_NFEV = 300
# Starts per subset tried by the conflict search: the best solution, then random ones.
CONFLICT_STARTS = 4


# The conflict search's default budget, in residual evaluations (module docstring): chosen
# so the whole 489-problem audit takes no longer than it did with the 15 s wall-clock budget
# it replaces (docs/geobuild.md gives the measurements).
CONFLICT_STEPS = 200_000


@dataclass(frozen=True)
class Budget:
    """Bounded work per problem: residual evaluations the conflict search may spend (the
    starts are bounded by their number and MAX_NFEV)."""

    conflict_steps: int = CONFLICT_STEPS


class _Steps:
    """A counter of residual evaluations: the unit of the conflict search's budget."""

    def __init__(self) -> None:
        self.used = 0

    def counted(self, fun: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        """`fun`, counting each call."""

        def call(*args: object, **kwargs: object) -> np.ndarray:
            self.used += 1
            return fun(*args, **kwargs)

        return call


@dataclass(frozen=True)
class SolveResult:
    """The solver's verdict on one problem.

    `status` is solved, no_construction or data_error; `program` the validated DSL program
    (solved only); `conflicts` the conditions that cannot hold together (no_construction);
    `residual` the largest condition residual at the best start; `restarts` the starts run;
    `reason` says why a problem is not solved, or notes on its data when it is.
    """

    problem_id: str
    status: str
    program: str | None
    conflicts: tuple[str, ...]
    residual: float
    restarts: int
    reason: str


def problem_seed(problem_id: str) -> int:
    """A seed from the problem id, stable across processes (unlike `hash`)."""
    return int.from_bytes(hashlib.sha256(problem_id.encode("utf-8")).digest()[:8], "big")


def blocking_data_errors(problem: Problem) -> list[str]:
    """Data notes that make the problem uninterpretable: unreadable conditions or objects.

    Notes on readable data (a reflex angle read as its complement, a suspicious bisector)
    do not block: the validator checks such conditions as read, so the solver does too.
    """
    out = [f"{c.type}: {c.error}" for c in problem.conditions if c.error is not None]
    out += [
        note
        for note in problem.data_errors
        if note.startswith(("required", "verification_conditions"))
    ]
    return out


def solve_problem(problem: Problem, restarts: int = 8, budget: Budget | None = None) -> SolveResult:
    """Solve one problem: a validated program, or the conflicting conditions, or a data error."""
    budget = budget or Budget()
    notes = "; ".join(problem.data_errors)
    blocking = blocking_data_errors(problem)
    if blocking:
        return SolveResult(problem.id, DATA_ERROR, None, (), float("nan"), 0, "; ".join(blocking))
    try:
        model = build_model(problem)
    except Unsupported as err:
        return SolveResult(problem.id, DATA_ERROR, None, (), float("nan"), 0, str(err))
    if model.space.size() == 0:
        # Nothing to place (no points named anywhere): the empty figure is the only one.
        program = write_program(model, model.state(np.zeros(0)))
        status = SOLVED if _accepted(problem, program) else NO_CONSTRUCTION
        return SolveResult(
            problem.id, status, program if status == SOLVED else None, (), 0.0, 0, notes
        )
    seed = problem_seed(problem.id)
    best_x: np.ndarray | None = None
    best_error = float("inf")
    used = 0
    for attempt in range(restarts):
        used += 1
        rng = np.random.default_rng([seed, attempt])
        # Alternate starts with and without incidences placed: each finds what the other misses.
        x = _optimise(model, model.initial(rng, place=attempt % 2 == 0))
        error = max(model.condition_errors(x), default=0.0)
        structural = _largest(model.residuals(x, active=()))
        if max(error, structural) < best_error:
            best_x, best_error = x, max(error, structural)
        if max(error, structural) < VALIDATE_BELOW:
            program = write_program(model, model.state(x))
            if _accepted(problem, program):
                return SolveResult(problem.id, SOLVED, program, (), error, used, notes)
    assert best_x is not None or not restarts
    if best_x is None:
        return SolveResult(problem.id, NO_CONSTRUCTION, None, (), float("inf"), 0, "no restarts")
    conflicts, complete = find_conflicts(model, best_x, seed, budget.conflict_steps)
    reason = (
        "no start satisfied every condition; conflicting set found by deletion"
        if complete
        else f"no start satisfied every condition; conflict search cut short by its budget "
        f"of {budget.conflict_steps} steps"
    )
    described = tuple(model.compiled[i].condition.describe() for i in conflicts)
    strained = model.strained(best_x, VALIDATE_BELOW)
    if strained:
        reason += "; the figure also needs: " + ", ".join(strained)
    return SolveResult(problem.id, NO_CONSTRUCTION, None, described, best_error, used, reason)


def find_conflicts(
    model: Model, best_x: np.ndarray, seed: int, steps: int
) -> tuple[list[int], bool]:
    """Indices of an (approximately) minimal unsatisfiable set of conditions, and whether
    the search finished within `steps` residual evaluations (checked before each subset,
    so it may overrun by one subset's test: bounded by CONFLICT_STARTS and MAX_NFEV).
    Conditions are dropped least violated first."""
    errors = model.condition_errors(best_x)
    active = list(range(len(model.compiled)))
    spent = _Steps()
    if not _satisfiable(model, (), best_x, seed, spent):
        # The structure alone (distinct points, drawable objects) cannot be met: no
        # condition is to blame, so report the most violated ones.
        return sorted(active, key=lambda i: -errors[i])[:3], True
    for index in sorted(active, key=lambda i: errors[i]):
        if spent.used >= steps:
            return active, False
        rest = [i for i in active if i != index]
        if not _satisfiable(model, rest, best_x, seed, spent):
            active = rest
    return active, True


def _satisfiable(
    model: Model, active: Sequence[int], start: np.ndarray, seed: int, spent: _Steps
) -> bool:
    starts = [start] + [
        model.initial(np.random.default_rng([seed, 1000 + k]), place=k % 2 == 0)
        for k in range(CONFLICT_STARTS - 1)
    ]
    for x0 in starts:
        x = _optimise(model, x0, active, spent)
        if _largest(model.residuals(x, active)) < SATISFIED_BELOW:
            return True
    return False


def _optimise(
    model: Model, x0: np.ndarray, active: Sequence[int] | None = None, spent: _Steps | None = None
) -> np.ndarray:
    spent = spent or _Steps()
    x = _least_squares(model, x0, active, separate=False, spent=spent)
    return _least_squares(model, x, active, separate=True, spent=spent)


def _least_squares(
    model: Model, x0: np.ndarray, active: Sequence[int] | None, separate: bool, spent: _Steps
) -> np.ndarray:
    result = least_squares(
        spent.counted(model.residuals),
        x0,
        kwargs={"active": active, "separate": separate},
        method="trf",
        max_nfev=MAX_NFEV,
        xtol=1e-14,
        ftol=1e-14,
        gtol=1e-14,
    )
    return np.asarray(result.x, dtype=float)


def _largest(values: np.ndarray) -> float:
    return float(np.max(np.abs(values))) if values.size else 0.0


def _accepted(problem: Problem, program: str) -> bool:
    """Whether the real executor runs the program and the real validator accepts it."""
    execution = execute(program)
    return execution.error is None and validate(problem, execution.scene).success
