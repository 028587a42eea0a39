"""Human evaluation (paper Appendix C): pages for annotators, and their answers as a model.

`human-export --items ITEMS --out DIR` writes every dotted-setup item of ITEMS (the models'
items, none set aside), shuffled with `--order-seed` (U-task pairs are stored yes-then-no,
so item order would give answers away), as static HTML pages of 10
(pipelines/noregeo/human_pages.py): DIR/index.html links DIR/page-NNN.html, each item with
its figure embedded, its question and an answer field; a "Download CSV" button writes the
annotator's answers as the CSV human-import reads. By default as the paper ran it
(pipelines/noregeo/human_quality.py): a training page with the answers shown, an
examination page, control items on every page (`--control-share`), 10 minutes per page
(`--page-time-limit`) and 3 annotators per item (`--overlap`, recorded for the import). The
training, examination and control items come from their own pool: items the same
generators draw with `--control-seed` (the item table's seed + 1 unless given), stratified
by task, never among the scored items. DIR/annotations-template.csv lists the page items
for annotating without a browser. The answers and the item roles go only to the key file,
outside DIR (`--key`, default DIR.key.json beside DIR), so DIR can be handed out whole.

`human-import --annotations FILE... --items ITEMS --out RESULTS [--key KEY]` reads rows
(item_id, annotator, answer as typed) from every file, normalises every answer to the JSON
answer format, excludes annotators who failed the examination (said so) or fall below
`--min-control-accuracy` on the controls, aggregates each scored item's votes over the
others (pipelines/noregeo/human_votes.py: numeric answers within +-0.5 agree; a tie is
reported and drawn, seeded), scores the vote with the models' rules
(pipelines.noregeo.scoring) and stores it as the model `human` in
RESULTS/noregeo/model=human/setup=dotted/part-annotations.parquet. Training, examination and
control items are not part of the human result.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from geometry.answers import parse_answer, read_number
from geometry.prompts import format_instruction
from pipelines.cli_args import read_json_object, read_utf8
from pipelines.noregeo.generate import SHARD_GLOB, read_manifest
from pipelines.noregeo.human_pages import (
    QUALIFICATION_PAGE,
    TRAINING_PAGE,
    page_name,
    render_index,
    render_page,
)
from pipelines.noregeo.human_quality import (
    DEFAULT_MIN_CONTROL_ACCURACY,
    DEFAULT_OVERLAP,
    DEFAULT_PAGE_TIME_LIMIT,
    DEFAULT_QUALIFICATION_PASS,
    QUALIFICATION,
    ROLES,
    SCORED,
    TRAINING,
    Annotator,
    Answer,
    check_annotators,
    controls_per_page,
    overlap_counts,
    plan_pages,
    pool_needed,
)
from pipelines.noregeo.human_votes import TIE_RULE, aggregate
from pipelines.noregeo.results import RESULT_SCHEMA
from pipelines.noregeo.scoring import score_row
from store.atomic import write_bytes_atomic, write_parquet_atomic
from store.errors import UsageError
from store.records import model_dir, write_run_record
from store.storage import Location

HUMAN = "human"
SETUP = "dotted"
# The key holds {"items": {id: {task, role, answer[, answer_type, options]}}, "pages": ...};
# format 3: the scored role is `scored` (format 2 called it `exam`), pool items carry their
# answer type and options (they are not in --items).
KEY_FORMAT = 3
OLD_SCORED = "exam"
COLUMNS = ("item_id", "annotator", "answer")
SHARD_NAME = "part-annotations.parquet"  # one fixed name: a new import replaces the old
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


def control_pool(
    items: Path, scored: list[dict[str, Any]], needed: int, seed: int | None
) -> tuple[dict[str, dict[str, Any]], int]:
    """Dotted items drawn for training, examination and controls: the item table's
    generators, options and image size with another seed (`seed`, else the table's + 1),
    ceil(needed / tasks) per task (stratified), numbered after the task's scored items
    (ids like theirs: nothing on a page tells a control from a scored item); an item whose
    figure a scored item shows too (the same geometry: the dotted question names no
    coordinates) is left out. Returns (rows by id, the seed used)."""
    import functools

    from geometry.items import build_items
    from geometry.render import render_png
    from geometry.tasks.options import GeneratorOptions

    manifest = read_manifest(items)
    table_seed = int(manifest.get("seed", 0))
    seed = table_seed + 1 if seed is None else seed
    if seed == table_seed:
        raise UsageError(
            f"--control-seed {seed} is the item table's seed: the controls would be the "
            "scored items; give another"
        )
    options = GeneratorOptions(**manifest.get("options", {}))
    render = functools.partial(render_png, grid_step=options.grid_step)
    tasks = sorted({r["task"] for r in scored})
    per_task = -(-needed // len(tasks)) + 1  # one spare per task for a repeated question
    asked = {(r["task"], r["geometry"]) for r in scored}
    pool: dict[str, dict[str, Any]] = {}
    for task in tasks:
        drawn = build_items(
            task, per_task, seed, ["dotted"], int(manifest.get("image_size", 448)), render,
            options,
        )  # fmt: skip
        fresh = [i.to_row() for i in drawn if (i.task, i.geometry) not in asked]
        first = 1 + max(int(r["item_id"].rsplit("-", 1)[1]) for r in scored if r["task"] == task)
        for k, row in enumerate(fresh[: per_task - 1]):
            item_id = f"{task}-{first + k:04d}"
            pool[item_id] = row | {"item_id": item_id}
    return pool, seed


def export_pages(
    items: Path,
    out: Path,
    key: Path | None = None,
    seed: int = 0,
    control_share: float = 0.0,
    training_page: bool = True,
    page_time_limit: int | None = DEFAULT_PAGE_TIME_LIMIT,
    qualification_page: bool = True,
    qualification_pass: float = DEFAULT_QUALIFICATION_PASS,
    overlap: int = DEFAULT_OVERLAP,
    control_seed: int | None = None,
) -> int:
    """Writes the HTML pages and template to `out` and the answers and item roles to
    `key`; the number of pages of scored items. The key must lie outside `out`: the pages
    folder is what annotators get."""
    key = key if key is not None else default_key(out)
    if key.resolve().is_relative_to(out.resolve()):
        raise UsageError(f"--key {key} is inside --out {out}; the answers must not ship with it")
    if key.exists():
        raise UsageError(f"--key {key} exists; give another --key or remove it")
    scored = dotted_items(items)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty; give a new directory")
    per_page = controls_per_page(control_share)
    needed = pool_needed(len(scored), per_page, training_page, qualification_page)
    pool, control_seed = control_pool(items, scored, needed, control_seed) if needed else ({}, None)
    by_id = {r["item_id"]: r for r in scored} | pool
    tasks = {i: r["task"] for i, r in pool.items()}
    plan = plan_pages([r["item_id"] for r in scored], tasks, seed, control_share,
                      training_page, qualification_page)  # fmt: skip
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
    if plan.qualification:
        text = render_page(
            -1, len(pages), shown(plan.qualification), header, HUMAN_FORMATS, page_time_limit,
            pass_mark=qualification_pass,
        )  # fmt: skip
        write_bytes_atomic(out / QUALIFICATION_PAGE, text.encode("utf-8"))
    index = render_index(
        pages, header, bool(plan.training), page_time_limit, bool(plan.qualification), overlap
    )
    write_bytes_atomic(out / "index.html", index.encode("utf-8"))
    once = dict.fromkeys(i for ids in [plan.qualification, *pages] for i in ids)
    template = "".join(f"{i},,\n" for i in once)
    write_bytes_atomic(out / "annotations-template.csv", (header + "\n" + template).encode())

    def entry(item_id: str) -> dict[str, Any]:
        row = by_id[item_id]
        base = {"task": row["task"], "role": plan.roles[item_id]}
        base["answer"] = json.loads(row["answer"])
        if item_id in pool:  # not in --items: the import scores it from here
            base |= {"answer_type": row["answer_type"], "options": list(row["options"] or [])}
        return base

    record = {
        "format": KEY_FORMAT,
        "order_seed": seed,
        "control_seed": control_seed,
        "control_share": control_share,
        "controls_per_page": plan.controls_per_page,
        "page_time_limit": page_time_limit,
        "qualification_pass": qualification_pass if plan.qualification else None,
        "overlap": overlap,
        "training": plan.training,
        "qualification": plan.qualification,
        "pages": pages,
        "items": {i: entry(i) for i in sorted(plan.roles)},
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


@dataclass(frozen=True)
class Key:
    """What human-import reads of an export's key: each item's role, the pool items (not in
    --items) as item rows, the examination's pass mark and the overlap asked for."""

    roles: dict[str, str]
    pool: dict[str, dict[str, Any]]
    pass_mark: float
    overlap: int | None


def read_key(key: Path) -> Key:
    """An export's key file (format 2's `exam` role read as `scored`)."""
    data = read_json_object(key, "--key", ("items",))
    entries = data["items"]
    if not isinstance(entries, dict) or not all(
        isinstance(v, dict) and v.get("role") in (*ROLES, OLD_SCORED) for v in entries.values()
    ):
        raise UsageError(
            f"--key {key} is not a human-export key: its items need a role "
            f"({', '.join(ROLES)}); export again"
        )
    roles = {str(i): SCORED if v["role"] == OLD_SCORED else v["role"] for i, v in entries.items()}
    pool = {
        str(i): {
            "item_id": str(i),
            "task": v.get("task"),
            "answer": json.dumps(v["answer"]),
            "answer_type": v["answer_type"],
            "options": v.get("options") or [],
        }
        for i, v in entries.items()
        if "answer_type" in v and "answer" in v
    }
    pass_mark = data.get("qualification_pass")
    overlap = data.get("overlap")
    return Key(
        roles,
        pool,
        float(pass_mark) if isinstance(pass_mark, int | float) else DEFAULT_QUALIFICATION_PASS,
        overlap if isinstance(overlap, int) else None,
    )


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
    failed_exam: set[str]
    pass_mark: float | None  # None: the export had no examination
    overlap: dict[str, int]  # scored item -> votes counted
    overlap_asked: int | None
    training_answers: int


def import_annotations(
    annotations: list[Path],
    items: Path,
    out: Path,
    key: Path | None = None,
    min_control_accuracy: float = DEFAULT_MIN_CONTROL_ACCURACY,
    min_qualification_accuracy: float | None = None,
) -> ImportSummary:
    """Checks the annotators on the key's examination and control items, votes, scores
    and writes the human results of the scored items (every item without a key).
    `min_qualification_accuracy`: the examination's pass mark, else the key's."""
    read = read_key(key) if key is not None else Key({}, {}, DEFAULT_QUALIFICATION_PASS, None)
    roles = read.roles
    pass_mark = read.pass_mark if min_qualification_accuracy is None else min_qualification_accuracy
    files = [(path, read_annotations(path)) for path in annotations]
    by_id = {r["item_id"]: r for r in dotted_items(items)} | read.pool
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

    verdicts = check_annotators(answers, roles, is_right, min_control_accuracy, pass_mark)
    people, kept = verdicts.people, verdicts.kept
    training = sum(roles.get(a.item_id) == TRAINING for a in answers)
    votes: dict[str, list[str]] = {}
    for a in answers:
        if a.annotator in kept and roles.get(a.item_id, SCORED) == SCORED:
            votes.setdefault(a.item_id, []).append(a.text)
    if not votes:
        raise UsageError(
            f"no scored answers left to vote: {len(people) - len(kept)} of {len(people)} "
            f"annotator(s) excluded ({len(verdicts.failed_exam)} failed the examination, "
            f"pass mark {pass_mark:g}; the others below --min-control-accuracy "
            f"{min_control_accuracy:g} or without control answers), and training, "
            "examination and control items are not voted"
        )
    digest = hashlib.sha256()
    for path in annotations:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    revision = digest.hexdigest()[:16]
    results, ties = [], []
    for item_id in sorted(votes):
        item = by_id[item_id]
        vote = aggregate(votes[item_id], agreement(item), item_id)
        if vote.tie:
            ties.append(item_id)
        record = {
            "annotators": len(votes[item_id]),
            "votes": vote.votes,
            "tie": vote.tie,
            "leaders": vote.leaders,
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
            "qualification_pass": pass_mark if QUALIFICATION in roles.values() else None,
            "overlap_asked": read.overlap,
            "annotators": {
                name: {
                    "answers": p.answers,
                    "controls": p.controls,
                    "controls_right": p.controls_right,
                    "examined": p.examined,
                    "examined_right": p.examined_right,
                    "failed_exam": name in verdicts.failed_exam,
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
    exam_mark = pass_mark if QUALIFICATION in roles.values() else None
    return ImportSummary(
        shard, ties, people, kept, verdicts.failed_exam, exam_mark, overlap, read.overlap, training
    )
