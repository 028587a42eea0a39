"""The public judge against the public validator itself: every program of the differential
fixture (tests/fixtures/public_verdicts/, recorded by running ooongs/GeoBuildBench at
5a31908; its README says how) whose public verdict did not change with the seed gets the
same verdict and the same two scores from geometry/dsl/public_judge.py."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from geometry.dsl.executor import execute
from geometry.dsl.prompts import system_prompt
from geometry.dsl.public_forms import public_form_error, public_validation_error
from geometry.dsl.public_judge import judge_public
from store.errors import UsageError
from tests.conftest import SHARED

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "public_verdicts"
DATA = SHARED / "geobuildbench" / "geoqa3_dataset_en.json"
RUN_KEYS = ("seed", "executed", "success")


def read_fixture(path: Path) -> list[dict[str, Any]]:
    """The fixture's records; a line that is not a program with its public runs is refused."""
    records = []
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise UsageError(f"{path} line {number}: not JSON ({err.msg})") from err
            runs = record.get("runs") if isinstance(record, dict) else None
            if (
                not isinstance(runs, list)
                or not runs
                or not isinstance(record.get("dsl"), str)
                or any(not isinstance(r, dict) or any(k not in r for k in RUN_KEYS) for r in runs)
            ):
                raise UsageError(
                    f"{path} line {number}: expected a program (dsl) with its public runs "
                    f"(each with {', '.join(RUN_KEYS)})"
                )
            records.append(record)
    return records


@pytest.fixture(scope="module")
def problems() -> dict[str, dict[str, Any]]:
    if not DATA.is_file():
        pytest.skip(f"needs the GeoBuild data at {DATA}")
    return {str(p["id"]): p for p in json.loads(DATA.read_text(encoding="utf-8"))["problems"]}


def _signature(run: dict[str, Any]) -> tuple[Any, ...]:
    """What a run decides: executed, success and the two scores (rounded past float noise)."""
    scores = (round(run.get("object_score", 0.0), 9), round(run.get("condition_score", 0.0), 9))
    return (run["executed"], run["success"], *scores)


def _deterministic(record: dict[str, Any]) -> bool:
    return len({_signature(run) for run in record["runs"]}) == 1


@pytest.fixture(scope="module")
def judged(problems) -> list[tuple[dict[str, Any], tuple[Any, ...]]]:
    """Every fixture record with our judge's signature for its program."""
    out = []
    for record in read_fixture(FIXTURE / "verdicts.jsonl.gz"):
        ours = judge_public(problems[record["id"]], record["dsl"])
        run = {
            "executed": ours.executed,
            "success": ours.success,
            "object_score": ours.object_score,
            "condition_score": ours.condition_score,
        }
        out.append((record, _signature(run)))
    return out


def test_judge_agrees_with_every_deterministic_public_verdict(judged) -> None:
    deterministic = [(r, ours) for r, ours in judged if _deterministic(r)]
    disagreements = [r["key"] for r, ours in deterministic if ours != _signature(r["runs"][0])]
    assert len(judged) >= 800 and len(deterministic) >= 800
    # Both outcomes and both execution results are well represented.
    outcomes = Counter(
        (r["runs"][0]["executed"], r["runs"][0]["success"]) for r, _ in deterministic
    )
    assert min(outcomes.values()) >= 100 and len(outcomes) == 3, outcomes
    assert not disagreements, disagreements[:10]


def test_where_the_public_verdict_varies_ours_is_one_it_gave(judged) -> None:
    varying = [(r, ours) for r, ours in judged if not _deterministic(r)]
    assert all(ours in {_signature(run) for run in r["runs"]} for r, ours in varying)


def test_nondeterministic_programs_are_listed_apart(judged) -> None:
    listed = {
        json.loads(line)["key"]
        for line in (FIXTURE / "nondeterministic.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    assert listed == {r["key"] for r, _ in judged if not _deterministic(r)}


def test_a_fixture_line_without_its_verdict_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(json.dumps({"key": "1:x", "id": "1", "dsl": "point : 0 0 -> A", "runs": []}))
    with pytest.raises(UsageError, match=r"bad.jsonl.gz line 1: expected a program"):
        read_fixture(path)


TRIANGLE = "point : 0 0 -> A\npoint : 1 0 -> B\npoint : 0 1 -> C\n"


@pytest.mark.parametrize(
    ("program", "executor_refuses", "validator_refuses"),
    [
        (TRIANGLE + "polygon : A B C -> p", True, False),
        (TRIANGLE + "polygon : A B C -> p a b c", False, False),
        # The regular n-gon form: polygon, n sides, n-2 new vertices.
        ("point : 0 0 -> A\npoint : 1 0 -> B\npolygon : A B 4 -> p a b c d C D", False, False),
        ("point : 0 0 -> A\npoint : 1 0 -> B\npolygon : A B 4 -> p", True, False),
        ("point : 0 0 -> A // the origin", False, True),
        (
            "point : 0 0 -> A # a '//' in a '#' comment is gone before the parser looks",
            False,
            False,
        ),
        ("point : -> A", True, False),  # a free point: no input
        ("point : 3*2 cos(60°) -> A", False, False),
        ("point : sqrt(2) 0 -> A", True, False),
        ("point : 1 + 1 0 -> A", True, False),  # '+' read as a label
        ("const int 5 -> n\npoint : n 0 -> A", False, False),
        ("const float 5 -> n", True, False),
        ("point:0 0 -> A", True, False),
        ("point : 1e400 0 -> A", False, False),  # inf: the public float() reads it
    ],
)
def test_forms_the_public_code_refuses(
    program: str, executor_refuses: bool, validator_refuses: bool
) -> None:
    # The fixture's hand_* programs (problem 367) record the public code's answer on each
    # of these forms but the last; the regular n-gon ones are hand_square_*.
    assert (public_form_error(program) is not None) is executor_refuses
    assert (public_validation_error(program) is not None) is validator_refuses


def test_our_prompts_examples_use_only_public_forms() -> None:
    # Every `command : ... -> ...` the system prompt shows, in its example program and in
    # backticks in its text, is a form the public parser accepts (given the example's labels).
    prompt = system_prompt()
    example = prompt.split("## Example", 1)[1].split("```")[1]
    assert "polygon" in example and public_form_error(example) is None
    assert execute(example).error is None
    labels = "point : 0 0 -> A\npoint : 1 0 -> B\npoint : 0 1 -> C\npoint : 2 2 -> O\n"
    labels += "circle : O A -> c\nline : A B -> l\n"
    shown = re.findall(r"`([a-z_]+ : [^`]*->[^`]*)`", prompt.split("## Commands", 1)[0])
    shown.remove("command : inputs -> outputs")  # the syntax itself, not a statement
    assert len(shown) >= 5 and all(public_form_error(labels + form) is None for form in shown)
