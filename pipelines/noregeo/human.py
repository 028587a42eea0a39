"""Human evaluation (paper Appendix C): pages for annotators, and their answers as a model.

`human-export --items ITEMS --out DIR` writes the dotted-setup items, shuffled with
`--order-seed` (U-task pairs are stored yes-then-no, so item order would give answers away),
as static HTML pages of 10 (pipelines/noregeo/human_pages.py): DIR/index.html links
DIR/page-NNN.html, each item with its figure embedded, its question and an answer field; a
"Download CSV" button writes the annotator's answers as the CSV human-import reads.
DIR/annotations-template.csv lists the item ids for annotating without a browser. The
answers go only to the key file, outside DIR (`--key`, default DIR.key.json beside DIR), so
DIR can be handed to annotators whole.

`human-import ANNOTATIONS.csv --items ITEMS --out RESULTS` reads rows (item_id, annotator,
answer as typed), normalises every answer to the JSON answer format, takes the majority
vote per item (a tie goes to the smallest normalised answer text, and is printed and
recorded), scores the vote with the models' rules (pipelines.noregeo.scoring) and stores it as the
model `human` in RESULTS/noregeo/model=human/setup=dotted/part-annotations.parquet.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from geometry.answers import read_number
from geometry.prompts import format_instruction
from pipelines.cli_args import read_utf8
from pipelines.noregeo.generate import SHARD_GLOB
from pipelines.noregeo.human_pages import page_name, render_index, render_page
from pipelines.noregeo.results import RESULT_SCHEMA
from pipelines.noregeo.scoring import score_row
from store.atomic import write_bytes_atomic, write_parquet_atomic
from store.errors import UsageError
from store.records import model_dir, write_run_record
from store.storage import Location

HUMAN = "human"
SETUP = "dotted"
PAGE_SIZE = 10
COLUMNS = ("item_id", "annotator", "answer")
SHARD_NAME = "part-annotations.parquet"  # one fixed name: a new import replaces the old
TIE_RULE = "majority vote; a tie goes to the smallest normalised answer text"
HUMAN_FORMATS = {
    "choice": "one of the options",
    "number": "a number, e.g. 12.5",
    "point": "a point as x, y, e.g. (3, -2)",
}


def dotted_items(items: Path) -> list[dict[str, Any]]:
    """The dotted-setup rows of an item directory, sorted by item_id."""
    files = sorted(items.glob(SHARD_GLOB)) if items.is_dir() else []
    if not files:
        raise UsageError(f"--items {items} holds no item table; create one with `generate`")
    rows = [r for f in files for r in _item_rows(f) if r["setup"] == SETUP]
    if not rows:
        raise UsageError(f"--items {items} has no {SETUP} setup; generate with --setups dotted")
    return sorted(rows, key=lambda r: r["item_id"])


def _item_rows(path: Path) -> list[dict[str, Any]]:
    try:
        return list(pq.read_table(path).to_pylist())
    except (OSError, pa.ArrowException) as err:
        raise UsageError(f"--items shard {path} is not a readable item table: {err}") from err


def question_text(row: dict[str, Any]) -> str:
    """The item's question without the JSON-format instruction meant for models."""
    instruction = format_instruction(row["answer_type"], row["options"] or ())
    return str(row["prompt"]).removesuffix(instruction).strip()


def default_key(out: Path) -> Path:
    """Where the key goes without `--key`: beside the pages folder, `<out>.key.json`."""
    out = out.resolve()
    return out.with_name(out.name + ".key.json")


def export_pages(items: Path, out: Path, key: Path | None = None, seed: int = 0) -> int:
    """Writes the HTML pages and template to `out` and the answers to `key`; the number of
    pages. The key must lie outside `out`: the pages folder is what annotators get."""
    key = key if key is not None else default_key(out)
    if key.resolve().is_relative_to(out.resolve()):
        raise UsageError(f"--key {key} is inside --out {out}; the answers must not ship with it")
    if key.exists():
        raise UsageError(f"--key {key} exists; give another --key or remove it")
    rows = dotted_items(items)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty; give a new directory")
    random.Random(seed).shuffle(rows)
    pages = [rows[i : i + PAGE_SIZE] for i in range(0, len(rows), PAGE_SIZE)]
    header = ",".join(COLUMNS)
    for number, page in enumerate(pages, start=1):
        shown = [row | {"question": question_text(row)} for row in page]
        text = render_page(number, len(pages), shown, header, HUMAN_FORMATS)
        write_bytes_atomic(out / page_name(number), text.encode("utf-8"))
    ids = [[row["item_id"] for row in page] for page in pages]
    write_bytes_atomic(out / "index.html", render_index(ids, header).encode("utf-8"))
    template = "".join(f"{r['item_id']},,\n" for r in rows)
    write_bytes_atomic(out / "annotations-template.csv", (header + "\n" + template).encode())
    answers = {r["item_id"]: {"task": r["task"], "answer": json.loads(r["answer"])} for r in rows}
    write_bytes_atomic(key, _json(dict(sorted(answers.items()))))
    return len(pages)


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


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


@dataclass(frozen=True)
class Vote:
    """The aggregated answer of one item: the winning text and how it won."""

    text: str  # normalised JSON, or the typed text when no annotator's answer could be read
    votes: dict[str, int]
    tie: bool


def majority(answers: list[str]) -> Vote:
    """Most frequent answer; among equally frequent ones, the smallest text."""
    counts = Counter(answers)
    top = max(counts.values())
    leaders = sorted(a for a, n in counts.items() if n == top)
    return Vote(leaders[0], dict(sorted(counts.items())), len(leaders) > 1)


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


def import_annotations(annotations: Path, items: Path, out: Path) -> tuple[Location, list[str]]:
    """Votes, scores and writes the human results; returns (shard path, tied item ids)."""
    rows = read_annotations(annotations)
    by_id = {r["item_id"]: r for r in dotted_items(items)}
    unknown = sorted({r["item_id"] for r in rows} - by_id.keys())
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise UsageError(
            f"{len(unknown)} item id(s) of {annotations} are not {SETUP} items of {items}: {shown}"
        )
    answers: dict[str, list[str]] = {}
    for r in rows:
        item = by_id[r["item_id"]]
        typed = normalise(r["answer"], item["answer_type"], list(item["options"] or []))
        answers.setdefault(r["item_id"], []).append(typed if typed is not None else r["answer"])
    revision = hashlib.sha256(annotations.read_bytes()).hexdigest()[:16]
    results, ties = [], []
    for item_id in sorted(answers):
        item, vote = by_id[item_id], majority(answers[item_id])
        if vote.tie:
            ties.append(item_id)
        record = {
            "annotators": len(answers[item_id]),
            "votes": vote.votes,
            "tie": vote.tie,
            "rule": TIE_RULE,
        }
        key = json.dumps({"item_id": item_id, "setup": SETUP, "model": HUMAN, "rev": revision})
        row = {name: item.get(name) for name in RESULT_SCHEMA.names} | {
            "model": HUMAN,
            "revision": revision,
            "engine": HUMAN,
            "sampling_params": json.dumps(record, sort_keys=True),
            "request_key": hashlib.sha256(key.encode()).hexdigest(),
            "generated_text": vote.text,
        }
        row |= score_row(
            vote.text, item["answer"], item["answer_type"], list(item["options"] or [])
        )
        results.append(row)
    root = model_dir(out, "noregeo", HUMAN)
    shard = root / f"setup={SETUP}" / SHARD_NAME
    write_parquet_atomic(shard, pa.Table.from_pylist(results, schema=RESULT_SCHEMA))
    write_run_record(
        root,
        {"benchmark": "noregeo", "model": HUMAN, "annotations": str(annotations.resolve()),
         "annotations_sha256": revision, "items": str(items.resolve()), "rule": TIE_RULE,
         "annotation_rows": len(rows), "items_voted": len(results), "ties": ties},
    )  # fmt: skip
    return shard, ties
