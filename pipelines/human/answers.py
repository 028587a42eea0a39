"""Annotators' answers: the rows of their CSV files (item_id, annotator, answer as typed),
each normalised to the JSON answer format the models answer in, and when two votes agree
(the models' scoring rule)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from geometry.answers import parse_answer, read_number
from pipelines.command_line.args import read_utf8
from pipelines.human.items import SETUP
from pipelines.human.quality import Answer
from pipelines.noregeo.scoring import score_row
from store.errors import UsageError

COLUMNS = ("item_id", "annotator", "answer")


def _number(text: str) -> Decimal | None:
    """A typed number, bounded like the models' answers (a typed 1e200 cannot be read)."""
    text = text.strip().removeprefix("+")
    if re.fullmatch(r"-?\d+,\d+", text):  # a decimal comma: "12,5"
        text = text.replace(",", ".")
    return read_number(text)


# Beyond this many digits after the point, "f" formatting would spell out every zero of a
# typed 1e-999999; JSON's exponent form says the same in a few characters.
_PLAIN_FRAC_DIGITS = 30


def _plain(value: Decimal) -> str:
    """A JSON number text: `12.50` -> `12.5`, `1E+2` -> `100`."""
    value = value.normalize()
    if value.adjusted() < -_PLAIN_FRAC_DIGITS:
        return str(value)
    text = format(value, "f")
    return "0" if text == "-0" else text


def normalise(text: str, answer_type: str, options: list[str]) -> str | None:
    """The typed answer as the JSON the models answer with; None when it cannot be read.

    >>> normalise(" Yes ", "choice", ["yes", "no"])
    '{"answer": "yes"}'
    >>> normalise("(3, -2)", "point", []), normalise("3,-2", "point", [])
    ('{"x": 3, "y": -2}', '{"x": 3, "y": -2}')
    >>> normalise("12,50", "number", [])
    '{"answer": 12.5}'
    """
    text = text.strip()
    if answer_type == "choice":
        bare = text.strip("\"'").strip().casefold()
        match = [o for o in options if o.casefold() == bare]
        return json.dumps({"answer": match[0]}) if match else None
    if answer_type == "number":
        value = _number(text)
        return None if value is None else f'{{"answer": {_plain(value)}}}'
    inner = re.sub(r"\b[xy]\s*=\s*", "", text.strip("()[] "))
    parts = [p for p in re.split(r"\s*[,;]\s*|\s+", inner) if p]
    values = [_number(p) for p in parts]
    if len(values) != 2 or values[0] is None or values[1] is None:
        return None
    return f'{{"x": {_plain(values[0])}, "y": {_plain(values[1])}}}'


def agreement(item: dict[str, Any]) -> Callable[[str, str], bool]:
    """Whether two votes on `item` agree: the first is right when the second is the answer
    (the models' rule: +-0.5 for numbers and points); unreadable votes only when equal."""
    answer_type, options = item["answer_type"], list(item["options"] or [])

    def agree(vote: str, answer: str) -> bool:
        if vote == answer:
            return True
        if not parse_answer(answer, answer_type, options).valid:
            return False
        return bool(score_row(vote, answer, answer_type, options)["correct"])

    return agree


def read_annotations(path: Path) -> list[dict[str, str]]:
    """Rows of the annotation CSV; a missing file or column is a UsageError."""
    if not path.is_file():
        raise UsageError(f"annotations {path} is not a file")
    reader = csv.DictReader(io.StringIO(read_utf8(path, "annotations"), newline=""))
    try:
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise UsageError(
                f"{path} lacks column(s) {', '.join(missing)}; needs {', '.join(COLUMNS)}"
            )
        rows = [{c: (r[c] or "").strip() for c in COLUMNS} for r in reader]
    except csv.Error as err:
        raise UsageError(f"annotations {path} is not valid CSV: {err}") from err
    if not rows:
        raise UsageError(f"{path} holds no annotation rows")
    return rows


def read_answers(
    files: list[tuple[Path, list[dict[str, str]]]], by_id: dict[str, dict[str, Any]]
) -> list[Answer]:
    """Every file's answered rows (as read_annotations read them), normalised; one answer
    per annotator and item (the same answer twice counts once, two different ones are a
    UsageError). Unanswered rows are skipped; an unknown item id or an unnamed annotator is
    a UsageError."""
    found: dict[tuple[str, str], Answer] = {}
    for path, read in files:
        rows = [r for r in read if r["answer"]]
        unknown = sorted({r["item_id"] for r in rows} - by_id.keys())
        if unknown:
            shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
            raise UsageError(
                f"--annotations {path}: {len(unknown)} item id(s) are not {SETUP} items of "
                f"--items: {shown}"
            )
        for r in rows:
            if not r["annotator"]:
                raise UsageError(
                    f"--annotations {path}: item {r['item_id']} has no annotator; name who "
                    "answered (votes are counted per annotator)"
                )
            item = by_id[r["item_id"]]
            typed = normalise(r["answer"], item["answer_type"], list(item["options"] or []))
            answer = Answer(r["item_id"], r["annotator"], typed or r["answer"], str(path))
            earlier = found.setdefault((answer.item_id, answer.annotator), answer)
            if earlier.text != answer.text:
                raise UsageError(
                    f"--annotations {path}: annotator {answer.annotator!r} answered "
                    f"{answer.item_id} as {earlier.text} in {earlier.source} and as "
                    f"{answer.text} here; keep one"
                )
    return list(found.values())
