"""Judging is deterministic: the same program and problem always give the same verdict.

Programs are generated here from a seeded RNG (free points placed by the executor's seed,
points on circles, polygons, intersections, predicates, some programs that stop with an
error), each paired with a problem whose required objects and conditions are drawn from
the same RNG. All are judged (executed and validated) in several rounds in this process,
each round in a different order, so state one judgment left behind (a cache, a shared RNG)
would show; a sample is judged again in processes with other string-hash seeds (set order
of strings changes with it, so a verdict that leaned on it would differ there).

Counts: one judgment takes 3 ms (idle) to 10 ms (loaded 2-core machine), so 300 programs x
8 rounds stays under about 25 s in `make test`; the issue's 100 rounds each take minutes
and run in `make stress`.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from geometry.dsl.dataset import Problem, parse_problem
from geometry.dsl.executor import execute
from geometry.dsl.public_judge import public_verdict
from geometry.dsl.validator import validate
from tests.conftest import REPO

N_PROGRAMS = 300
ROUNDS = 8
N_CROSS_PROCESS = 40


def program_for(rng: random.Random) -> str:
    """A construction over A, B, C, P, M, H with random coordinates and optional parts."""
    x1, y1, x2, y2 = (rng.randint(-9, 9) for _ in range(4))
    if (x1, y1) == (x2, y2):
        x2 += 3
    lines = [
        "point : -> A",
        f"point : {x1} {y1} -> B",
        f"point : {x2} {y2} -> C",
        "circle : A B -> c",
        "point : c -> P",
        "midpoint : A C -> M",
        "line : A C -> l",
        "orthogonal_line : P l -> m",
        "intersect : l m -> H",
    ]
    shape = rng.choice(["polygon3", "polygon4", "segments", "bowtie", "none"])
    if shape == "polygon3":
        lines.append("polygon : A B C -> tri ab bc ca")
    elif shape == "polygon4":
        lines.append("polygon : A B C P -> quad")
    elif shape == "segments":
        lines += ["segment : A B -> ab", "segment : B C -> bc", "segment : C P -> cp"]
        lines += ["segment : P A -> pa"] if rng.random() < 0.7 else []
    elif shape == "bowtie":
        lines += ["segment : A C -> ac", "segment : C B -> cb", "segment : B P -> bp"]
        lines += ["segment : P A -> pa"]
    lines += rng.sample(
        [
            "are_concyclic : A B C P -> k",
            "are_parallel : l m -> q",
            "are_perpendicular : l m -> r",
            "contained_by : H l -> h_on_l",
            "power : 3 2 -> nine",
            "are_collinear : A M C -> col",
        ],
        k=3,
    )
    if rng.random() < 0.15:  # stops part way: parallel lines do not meet
        lines.insert(rng.randint(7, len(lines)), "intersect : l l -> Z")
    return "\n".join(lines) + "\n"


def problem_for(rng: random.Random, index: int) -> Problem:
    """A problem over the same labels, its requirements drawn from `rng`."""
    conditions = [
        {"type": "point_on_circle", "point": "P", "circle_center": "A"},
        {"type": "perpendicular", "objects": [["A", "C"], ["P", "H"]]},
        {"type": "concyclic", "points": ["A", "B", "C", "P"]},
        {"type": "distance_equals", "segment": [["A", "B"]], "value": rng.randint(1, 12)},
        {"type": "angle_value", "points": [["A", "B", "C"]], "value": rng.choice([30, 60, 90])},
        {"type": "collinear", "points": ["A", "H", "C"]},
        {"type": "midpoint_of", "point": "M", "segment": ["A", "C"]},
        {"type": "parallel", "objects": [["A", "B"], ["C", "P"]]},
    ]
    required = {
        "points": rng.sample(["A", "B", "C", "P", "M", "H"], k=rng.randint(2, 6)),
        "segments": rng.sample([["A", "B"], ["B", "C"], ["C", "P"], ["A", "C"]], k=2),
        "circles": [{"center": "A", "radius_point": rng.choice(["B", "C"])}],
        "polygons": rng.sample([["A", "B", "C"], ["A", "B", "C", "P"], ["A", "C", "B", "P"]], k=1),
    }
    return parse_problem(
        {
            "id": f"det-{index}",
            "required_objects": required,
            "verification_conditions": rng.sample(conditions, k=rng.randint(1, len(conditions))),
        }
    )


def cases() -> list[tuple[str, Problem]]:
    """The generated (program, problem) pairs, the same on every call."""
    out = []
    for index in range(N_PROGRAMS):
        rng = random.Random(index)
        out.append((program_for(rng), problem_for(rng, index)))
    return out


def judge(program: str, problem: Problem) -> str:
    """The verdict and execution error of one program, as canonical JSON."""
    execution = execute(program)
    error = None if execution.error is None else str(execution.error)
    verdict = {
        **validate(problem, execution.scene).to_json(),
        **public_verdict(problem, program).to_json(),
    }
    return json.dumps({"verdict": verdict, "error": error}, sort_keys=True)


def judged_repeatedly(rounds: int) -> list[str]:
    """Each case judged `rounds` times in shuffled orders; fails on any differing verdict."""
    pairs = cases()
    first = [judge(program, problem) for program, problem in pairs]
    order = list(range(len(pairs)))
    for round_seed in range(1, rounds):
        random.Random(round_seed).shuffle(order)
        for i in order:
            assert judge(*pairs[i]) == first[i], pairs[i][1].id
    return first


def test_repeated_judging_gives_identical_verdicts() -> None:
    judged = [json.loads(text) for text in judged_repeatedly(ROUNDS)]
    # The generated set is varied enough to mean something.
    assert any(j["verdict"]["success"] for j in judged)
    assert any(not j["verdict"]["success_public"] for j in judged)
    assert any(j["error"] for j in judged)
    missing = [" ".join(j["verdict"]["missing_objects"]) for j in judged]
    assert any("polygon" in text for text in missing)
    assert any("polygon" not in text for text in missing)


@pytest.mark.stress
def test_each_program_judged_100_times_gives_identical_verdicts() -> None:
    # The full count (minutes); `make stress` runs it, `make test` runs ROUNDS.
    judged_repeatedly(100)


_CHILD = """
import sys
from tests.geometry.dsl.test_determinism import cases, judge
for program, problem in cases()[: int(sys.argv[1])]:
    print(judge(program, problem))
"""


def test_verdicts_do_not_depend_on_the_string_hash_seed() -> None:
    here = [judge(program, problem) for program, problem in cases()[:N_CROSS_PROCESS]]
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(N_CROSS_PROCESS)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert child.stdout.splitlines() == here
