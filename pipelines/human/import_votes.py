"""What `human-import` does (paper Appendix C): annotations voted and stored as a model.

`human-import --annotations FILE... --items ITEMS --out RESULTS [--key KEY]` reads rows
(item_id, annotator, answer as typed) from every file, normalises every answer to the JSON
answer format, excludes annotators who failed the examination (said so) or fall below
`--min-control-accuracy` on the controls, aggregates each scored item's votes over the
others (pipelines/human/votes.py: numeric answers within +-0.5 agree; a tie is
reported and drawn, seeded), scores the vote with the models' rules
(pipelines.noregeo.scoring) and stores it as the model `human` in
RESULTS/noregeo/model=human/setup=dotted/part-annotations.parquet. Training, examination and
control items are not part of the human result.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipelines.human.answers import agreement, read_annotations, read_answers
from pipelines.human.items import HUMAN, SETUP, dotted_items
from pipelines.human.key import Key, read_key
from pipelines.human.quality import (
    DEFAULT_MIN_CONTROL_ACCURACY,
    DEFAULT_QUALIFICATION_PASS,
    QUALIFICATION,
    SCORED,
    TRAINING,
    Annotator,
    Answer,
    check_annotators,
    overlap_counts,
)
from pipelines.human.votes import TIE_RULE, aggregate
from pipelines.noregeo.results import RESULT_SCHEMA
from pipelines.noregeo.scoring import score_row
from store.atomic import write_parquet_atomic
from store.errors import UsageError
from store.records import model_dir, write_run_record
from store.storage import Location

SHARD_NAME = "part-annotations.parquet"  # one fixed name: a new import replaces the old


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
