"""Ray Data step: parse each generated text under its answer schema and score it."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import numpy as np

from actors.contract import OUTPUT_COLUMNS, check_columns
from geometry.answers import Parsed, parse_answer, score_answer

NEEDS = ("answer", "answer_type", "options", *OUTPUT_COLUMNS)


def parsed_json(parsed: Parsed, answer_type: str) -> str | None:
    """The parsed answer as JSON text (numbers as floats), None when invalid."""
    if parsed.value is None:
        return None
    value = parsed.value
    if answer_type == "point":
        assert isinstance(value, tuple)
        return json.dumps({"x": float(value[0]), "y": float(value[1])})
    return json.dumps({"answer": float(value) if isinstance(value, Decimal) else value})


def score_row(text: Any, answer: str, answer_type: str, options: list[str]) -> dict[str, Any]:
    parsed = parse_answer(text if isinstance(text, str) else None, answer_type, options)
    score = score_answer(parsed, answer, answer_type)
    return {
        "parsed": parsed_json(parsed, answer_type),
        "valid": parsed.valid,
        "parse_error": parsed.error,
        "correct": score.correct,
        "abs_error": score.abs_error,
        "sq_error": score.sq_error,
    }


def parse_and_score(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    check_columns(batch, NEEDS, "parse_and_score")
    rows = [
        score_row(t, str(a), str(at), [str(o) for o in (opts if opts is not None else [])])
        for t, a, at, opts in zip(
            batch["generated_text"],
            batch["answer"],
            batch["answer_type"],
            batch["options"],
            strict=True,
        )
    ]
    out = dict(batch)
    for column in ("parsed", "parse_error"):
        out[column] = np.array([r[column] for r in rows], dtype=object)
    out["valid"] = np.array([r["valid"] for r in rows], dtype=bool)
    out["correct"] = np.array([r["correct"] for r in rows], dtype=bool)
    for column in ("abs_error", "sq_error"):
        out[column] = np.array(
            [np.nan if r[column] is None else r[column] for r in rows], dtype=np.float64
        )
    return out
