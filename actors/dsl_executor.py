"""The DSL-executor step of the GeoBuild loop: a callable class for Ray Data `map_batches`.

Each row is one model reply to one problem in one round. The step extracts the program,
executes it, validates the very scene it executed, renders that scene when the feedback
includes the figure, and writes the feedback message. A reply that is empty, garbage, or a
program that fails is an error recorded on the row, never an exception: one bad reply
must not stop a round of hundreds of problems.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from actors.contract import arrow_ready, check_columns, numpy_columns
from geometry.dsl.dataset import Problem, load_problems
from geometry.dsl.errors import DSLError
from geometry.dsl.executor import execute
from geometry.dsl.program_extract import extract_program
from geometry.dsl.prompts import FEEDBACK_MODES, feedback_text
from geometry.dsl.public_categories import ENGINE_ERROR, NO_PROGRAM, public_kind
from geometry.dsl.public_judge import PublicVerdict, public_verdict
from geometry.dsl.render import render_scene
from geometry.dsl.validator import Verdict, validate

NEEDS = ("problem_id", "round", "generated_text", "engine_error")
# ENGINE_ERROR and NO_PROGRAM, the categories beyond the DSL's own (the engine failed, the
# reply held no program), live beside their public kinds in geometry.dsl.public_categories.
# What the executor adds to each row, typed once (GeoBuild's results schema takes them too).
JUDGED = pa.schema(
    [
        ("program", pa.string()),
        ("error_line", pa.int64()),
        ("error_category", pa.string()),
        ("error_category_public", pa.string()),  # the public benchmark's kind of it
        ("error_message", pa.string()),
        # Verdict.to_json() and PublicVerdict.to_json() merged, as JSON text
        ("verdict", pa.string()),
        ("object_score", pa.float64()),
        ("condition_score", pa.float64()),
        ("partial_score", pa.float64()),
        ("success", pa.bool_()),
        # The public verdict (geometry/dsl/public_judge.py): the public validator's checks
        # in its window, both scores >= 0.9, blocked by any error, as there.
        ("success_public", pa.bool_()),
        ("object_score_public", pa.float64()),
        ("condition_score_public", pa.float64()),
        # The problem's data notes joined by "; ", "" when its data is clean.
        ("data_errors", pa.string()),
        ("feedback_text", pa.string()),
        ("feedback_image", pa.binary()),  # the figure sent with the feedback, if any
        ("feedback_image_sha256", pa.string()),
    ]
)
OUTPUT_COLUMNS: tuple[str, ...] = tuple(JUDGED.names)


@dataclass(frozen=True)
class Judged:
    """What one reply came to: program, first error, verdict, feedback (and figure)."""

    program: str
    error_line: int | None
    error_category: str | None
    error_message: str | None
    verdict: Verdict
    success: bool
    public: PublicVerdict
    success_public: bool
    data_errors: tuple[str, ...]
    feedback: str
    image: bytes | None

    def columns(self) -> dict[str, Any]:
        """The row's JUDGED values."""
        return {
            "program": self.program,
            "error_line": self.error_line,
            "error_category": self.error_category,
            "error_category_public": public_kind(self.error_category),
            "error_message": self.error_message,
            "verdict": json.dumps(
                {**self.verdict.to_json(), **self.public.to_json()},
                ensure_ascii=False,
                sort_keys=True,
            ),
            "object_score": self.verdict.object_score,
            "condition_score": self.verdict.condition_score,
            "partial_score": self.verdict.partial_score,
            "success": self.success,
            "success_public": self.success_public,
            "object_score_public": self.public.object_score,
            "condition_score_public": self.public.condition_score,
            "data_errors": "; ".join(self.data_errors),
            "feedback_text": self.feedback,
            "feedback_image": self.image,
            "feedback_image_sha256": None
            if self.image is None
            else hashlib.sha256(self.image).hexdigest(),
        }


def judge_reply(
    problem: Problem,
    text: str | None,
    engine_error: str | None,
    *,
    round_number: int,
    max_rounds: int,
    mode: str,
    with_image: bool,
    image_size: int = 512,
) -> Judged:
    """Extract, execute, validate, render and write feedback for one reply."""
    program = "" if engine_error is not None else extract_program(text)
    execution = execute(program)
    verdict = validate(problem, execution.scene)
    error: DSLError | None = execution.error
    if engine_error is not None:
        where: tuple[int | None, str | None, str | None] = (None, ENGINE_ERROR, engine_error)
    elif not program.strip():
        where = (None, NO_PROGRAM, "the reply holds no DSL statement (`command : in -> out`)")
    elif error is not None:
        where = (error.line, error.category, error.message)
    else:
        where = (None, None, None)
    success = where[1] is None and verdict.success
    # The public agent validates only a program that executed without error
    # (src/agent/react_agent.py: `if exec_result.success`), so an error blocks its success too.
    public = public_verdict(problem, program)
    success_public = where[1] is None and public.success
    image = None
    if with_image and mode == "full" and program.strip() and not success:
        image = render_scene(execution.scene, image_size)
    feedback = feedback_text(
        mode=mode,
        round_number=round_number,
        max_rounds=max_rounds,
        engine_error=engine_error,
        program=program,
        error=error,
        verdict=verdict,
        with_image=image is not None,
    )
    return Judged(
        program,
        *where,
        verdict,
        success,
        public,
        success_public,
        problem.data_errors,
        feedback,
        image,
    )


class DSLExecutor:
    """Ray Data step: `ds.map_batches(DSLExecutor, fn_constructor_kwargs=..., compute=...)`.

    Loads the problems once per actor; adds the JUDGED columns, one output row per input row.
    """

    def __init__(
        self,
        dataset: str,
        lang: str,
        mode: str,
        with_image: bool,
        max_rounds: int,
        image_size: int = 512,
    ) -> None:
        if mode not in FEEDBACK_MODES:
            raise ValueError(f"feedback mode must be one of {FEEDBACK_MODES}, got {mode!r}")
        self.problems = {p.id: p for p in load_problems(dataset, lang)}
        self.options = {
            "mode": mode,
            "with_image": with_image,
            "max_rounds": max_rounds,
            "image_size": image_size,
        }

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every input column plus the JUDGED columns, one output row per input row."""
        check_columns(batch, NEEDS, "DSLExecutor")
        rows: list[dict[str, Any]] = []
        for i in range(len(batch["problem_id"])):
            problem = self.problems.get(str(batch["problem_id"][i]))
            if problem is None:
                raise KeyError(f"DSLExecutor: problem {batch['problem_id'][i]!r} not in data set")
            judged = judge_reply(
                problem,
                _text_or_none(batch["generated_text"][i]),
                _text_or_none(batch["engine_error"][i]),
                round_number=int(batch["round"][i]),
                **self.options,  # type: ignore[arg-type]
            )
            rows.append(judged.columns())
        columns = {column: [row[column] for row in rows] for column in OUTPUT_COLUMNS}
        return {**arrow_ready(batch), **numpy_columns(JUDGED, columns)}


def _text_or_none(value: Any) -> str | None:
    """Ray hands missing strings back as None, NaN or other non-strings: all are None."""
    return str(value) if isinstance(value, str) else None
