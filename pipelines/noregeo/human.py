"""Human evaluation (paper Appendix C): pages for annotators, and their answers as a model.

`human-export --items ITEMS --out DIR` writes the dotted-setup items, shuffled with
`--order-seed` (U-task pairs are stored yes-then-no, so item order would give answers away),
as static HTML pages of 10 (pipelines/noregeo/human_pages.py): DIR/index.html links
DIR/page-NNN.html, each item with its figure embedded, its question and an answer field; a
"Download CSV" button writes the annotator's answers as the CSV human-import reads.
`--control-share` mixes control items into every page, `--training-page` adds a page with
the answers shown, `--page-time-limit` locks a page's fields when its time is up
(pipelines/noregeo/human_quality.py). DIR/annotations-template.csv lists the page items
for annotating without a browser. The answers and the item roles go only to the key file,
outside DIR (`--key`, default DIR.key.json beside DIR), so DIR can be handed out whole.

`human-import --annotations FILE... --items ITEMS --out RESULTS [--key KEY]` reads rows
(item_id, annotator, answer as typed) from every file, normalises every answer to the JSON
answer format, measures each annotator on the control items the key names and excludes
those below `--min-control-accuracy`, takes the majority vote per item over the others (a
tie goes to the smallest normalised answer text, and is printed and recorded), scores the
vote with the models' rules (pipelines.noregeo.scoring) and stores it as the model `human`
in RESULTS/noregeo/model=human/setup=dotted/part-annotations.parquet. Control and training
items are not part of the human result.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
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
from pipelines.cli_args import read_json_object, read_utf8
from pipelines.noregeo.generate import SHARD_GLOB
from pipelines.noregeo.human_pages import TRAINING_PAGE, page_name, render_index, render_page
from pipelines.noregeo.human_quality import (
    DEFAULT_MIN_CONTROL_ACCURACY,
    EXAM,
    ROLES,
    TRAINING,
    Annotator,
    Answer,
    check_annotators,
    overlap_counts,
    plan_pages,
)
from pipelines.noregeo.results import RESULT_SCHEMA
from pipelines.noregeo.scoring import score_row
from store.atomic import write_bytes_atomic, write_parquet_atomic
from store.errors import UsageError
from store.records import model_dir, write_run_record
from store.storage import Location

HUMAN = "human"
SETUP = "dotted"
KEY_FORMAT = 2  # the key holds {"items": {id: {task, role, answer}}, "pages": ...}
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


def answer_for_people(answer: str, answer_type: str) -> str:
    """An answer as the training page shows it: `yes`, `12.5`, `(3, -2)`."""
    value = json.loads(answer)
    if answer_type == "point":
        return f"({value['x']}, {value['y']})"
    return str(value["answer"])


def export_pages(
    items: Path,
    out: Path,
    key: Path | None = None,
    seed: int = 0,
    control_share: float = 0.0,
    training_page: bool = False,
    page_time_limit: int | None = None,
) -> int:
    """Writes the HTML pages and template to `out` and the answers and item roles to
    `key`; the number of exam pages. The key must lie outside `out`: the pages folder is
    what annotators get."""
    key = key if key is not None else default_key(out)
    if key.resolve().is_relative_to(out.resolve()):
        raise UsageError(f"--key {key} is inside --out {out}; the answers must not ship with it")
    if key.exists():
        raise UsageError(f"--key {key} exists; give another --key or remove it")
    by_id = {r["item_id"]: r for r in dotted_items(items)}
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty; give a new directory")
    plan = plan_pages(list(by_id), seed, control_share, training_page)
    header = ",".join(COLUMNS)

    def shown(ids: list[str], with_answers: bool = False) -> list[dict[str, Any]]:
        rows = [by_id[i] | {"question": question_text(by_id[i])} for i in ids]
        if with_answers:
            rows = [r | {"shown_answer": answer_for_people(r["answer"], r["answer_type"])}
                    for r in rows]  # fmt: skip
        return rows

    pages = plan.pages
    for number, ids in enumerate(pages, start=1):
        text = render_page(number, len(pages), shown(ids), header, HUMAN_FORMATS, page_time_limit)
        write_bytes_atomic(out / page_name(number), text.encode("utf-8"))
    if plan.training:
        text = render_page(0, len(pages), shown(plan.training, True), header, HUMAN_FORMATS)
        write_bytes_atomic(out / TRAINING_PAGE, text.encode("utf-8"))
    index = render_index(pages, header, bool(plan.training), page_time_limit)
    write_bytes_atomic(out / "index.html", index.encode("utf-8"))
    once = dict.fromkeys(i for ids in pages for i in ids)  # a control may show on two pages
    template = "".join(f"{i},,\n" for i in once)
    write_bytes_atomic(out / "annotations-template.csv", (header + "\n" + template).encode())
    record = {
        "format": KEY_FORMAT,
        "order_seed": seed,
        "control_share": control_share,
        "controls_per_page": plan.controls_per_page,
        "page_time_limit": page_time_limit,
        "training": plan.training,
        "pages": pages,
        "items": {
            i: {"task": r["task"], "role": plan.roles[i], "answer": json.loads(r["answer"])}
            for i, r in sorted(by_id.items())
        },
    }
    write_bytes_atomic(key, _json(record))
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


def read_key(key: Path) -> dict[str, str]:
    """Item id -> role (exam, control, training) from an export's key file."""
    data = read_json_object(key, "--key", ("items",))
    entries = data["items"]
    if not isinstance(entries, dict) or not all(
        isinstance(v, dict) and v.get("role") in ROLES for v in entries.values()
    ):
        raise UsageError(
            f"--key {key} is not a human-export key: its items need a role "
            f"({', '.join(ROLES)}); export again"
        )
    return {str(i): v["role"] for i, v in entries.items()}


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


@dataclass(frozen=True)
class ImportSummary:
    """What human-import did: where the votes went and how the annotators fared."""

    shard: Location
    ties: list[str]
    annotators: dict[str, Annotator]
    kept: set[str]
    overlap: dict[str, int]  # exam item -> votes counted
    training_answers: int


def import_annotations(
    annotations: list[Path],
    items: Path,
    out: Path,
    key: Path | None = None,
    min_control_accuracy: float = DEFAULT_MIN_CONTROL_ACCURACY,
) -> ImportSummary:
    """Checks the annotators on the key's control items, votes, scores and writes the
    human results of the exam items (every item without a key)."""
    roles = read_key(key) if key is not None else {}
    files = [(path, read_annotations(path)) for path in annotations]
    by_id = {r["item_id"]: r for r in dotted_items(items)}
    strangers = sorted(roles.keys() - by_id.keys())
    if strangers:
        raise UsageError(
            f"--key {key} names {len(strangers)} item(s) that are not {SETUP} items of "
            f"--items (e.g. {strangers[0]}): it belongs to another item table"
        )
    answers = read_answers(files, by_id)

    def is_right(answer: Answer) -> bool:
        item = by_id[answer.item_id]
        options = list(item["options"] or [])
        return bool(score_row(answer.text, item["answer"], item["answer_type"], options)["correct"])

    people, kept = check_annotators(answers, roles, is_right, min_control_accuracy)
    training = sum(roles.get(a.item_id) == TRAINING for a in answers)
    votes: dict[str, list[str]] = {}
    for a in answers:
        if a.annotator in kept and roles.get(a.item_id, EXAM) == EXAM:
            votes.setdefault(a.item_id, []).append(a.text)
    if not votes:
        raise UsageError(
            f"no exam answers left to vote: {len(people) - len(kept)} of {len(people)} "
            f"annotator(s) below --min-control-accuracy {min_control_accuracy:g} "
            "(or without control answers), and control and training items are not voted"
        )
    digest = hashlib.sha256()
    for path in annotations:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    revision = digest.hexdigest()[:16]
    results, ties = [], []
    for item_id in sorted(votes):
        item, vote = by_id[item_id], majority(votes[item_id])
        if vote.tie:
            ties.append(item_id)
        record = {
            "annotators": len(votes[item_id]),
            "votes": vote.votes,
            "tie": vote.tie,
            "rule": TIE_RULE,
        }
        request = {"item_id": item_id, "setup": SETUP, "model": HUMAN, "rev": revision}
        row = {name: item.get(name) for name in RESULT_SCHEMA.names} | {
            "model": HUMAN,
            "revision": revision,
            "engine": HUMAN,
            "sampling_params": json.dumps(record, sort_keys=True),
            "request_key": hashlib.sha256(json.dumps(request).encode()).hexdigest(),
            "generated_text": vote.text,
        }
        row |= score_row(
            vote.text, item["answer"], item["answer_type"], list(item["options"] or [])
        )
        results.append(row)
    root = model_dir(out, "noregeo", HUMAN)
    shard = root / f"setup={SETUP}" / SHARD_NAME
    write_parquet_atomic(shard, pa.Table.from_pylist(results, schema=RESULT_SCHEMA))
    overlap = {i: len(v) for i, v in votes.items()}
    write_run_record(
        root,
        {
            "benchmark": "noregeo",
            "model": HUMAN,
            "annotations": ", ".join(str(p.resolve()) for p in annotations),
            "annotations_sha256": revision,
            "key": str(key.resolve()) if key is not None else None,
            "items": str(items.resolve()),
            "rule": TIE_RULE,
            "min_control_accuracy": min_control_accuracy,
            "annotators": {
                name: {
                    "answers": p.answers,
                    "controls": p.controls,
                    "controls_right": p.controls_right,
                    "kept": name in kept,
                }
                for name, p in sorted(people.items())
            },  # fmt: skip
            "annotation_rows": len(answers),
            "training_answers": training,
            "items_voted": len(results),
            "overlap": {str(n): items for n, items in overlap_counts(overlap).items()},
            "ties": ties,
        },
    )
    return ImportSummary(shard, ties, people, kept, overlap, training)
