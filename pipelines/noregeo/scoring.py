"""Ray Data step: parse each generated text under its answer schema and score it."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pyarrow as pa

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
    """One answer parsed and scored: the SCORE_FIELDS values."""
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


SCORE_FIELDS = pa.schema(
    [
        ("parsed", pa.string()),
        ("valid", pa.bool_()),
        ("parse_error", pa.string()),
        ("correct", pa.bool_()),
        ("abs_error", pa.float64()),
        ("sq_error", pa.float64()),
    ]
)


def parse_and_score(batch: pa.Table) -> pa.Table:
    """Ray Data step (pyarrow batches): adds the SCORE_FIELDS columns."""
    check_columns(batch.column_names, NEEDS, "parse_and_score")
    cols = {
        n: batch.column(n).to_pylist()
        for n in ("generated_text", "answer", "answer_type", "options")
    }
    rows = [
        score_row(text, answer, answer_type, list(options or []))
        for text, answer, answer_type, options in zip(
            cols["generated_text"],
            cols["answer"],
            cols["answer_type"],
            cols["options"],
            strict=True,
        )
    ]
    for field in SCORE_FIELDS:
        batch = batch.append_column(field, pa.array([r[field.name] for r in rows], field.type))
    return batch
