"""`python -m pipelines human-import --annotations FILE... --items ITEMS --out RESULTS`.

Annotators checked on the examination and control items of `--key` (the export's key; one
who failed the examination is excluded, and the import says so), the votes of each scored
item aggregated over the annotators kept (numeric answers within +-0.5 agree; ties reported),
scored like a model and stored as the model `human` (dotted setup); see
pipelines/human/import_votes.py, quality.py and votes.py.
"""

from __future__ import annotations

import argparse

from pipelines.command_line.args import existing_dir, existing_file, output_dir, share
from pipelines.human.import_votes import ImportSummary, import_annotations
from pipelines.human.quality import (
    DEFAULT_MIN_CONTROL_ACCURACY,
    DEFAULT_QUALIFICATION_PASS,
    overlap_counts,
    share_text,
)
from pipelines.human.votes import TIE_RULE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `human-import` command's options."""
    parser.add_argument(
        "--annotations",
        type=existing_file,
        required=True,
        nargs="+",
        metavar="FILE",
        help="CSV file(s) with item_id, annotator, answer (one per annotator or page, or one "
        "for all)",
    )
    parser.add_argument(
        "--items", type=existing_dir, required=True, help="the exported item directory"
    )
    parser.add_argument(
        "--out", type=output_dir, required=True, metavar="RESULTS",
        help="results root; the votes go under RESULTS/noregeo/model=human",
    )  # fmt: skip
    parser.add_argument(
        "--key",
        type=existing_file,
        default=None,
        help="the human-export key: which items are the examination and controls "
        "(annotators are measured on them) and training (ignored); without it every item is "
        "voted and everyone kept",
    )
    parser.add_argument(
        "--min-qualification-accuracy",
        type=share,
        default=None,
        metavar="A",
        help="the examination's pass mark: annotators below A (0..1), or who took no "
        "examination, are excluded (default: the key's, else "
        f"{DEFAULT_QUALIFICATION_PASS})",
    )
    parser.add_argument(
        "--min-control-accuracy",
        type=share,
        default=DEFAULT_MIN_CONTROL_ACCURACY,
        metavar="A",
        help="annotators whose control accuracy is below A (0..1), or who answered no "
        f"control item, are left out of the vote (default {DEFAULT_MIN_CONTROL_ACCURACY})",
    )


def print_summary(summary: ImportSummary) -> None:
    """Each annotator's control record, the overlap per item and the ties."""
    print("annotator\tanswers\tcontrols\tright\taccuracy\tvote\texamination")
    for name, person in sorted(summary.annotators.items()):
        vote = "kept" if name in summary.kept else "excluded"
        exam = (
            f"{person.examined_right}/{person.examined}" if summary.pass_mark is not None else "-"
        )
        print(
            f"{name}\t{person.answers}\t{person.controls}\t{person.controls_right}\t"
            f"{share_text(person.control_accuracy)}\t{vote}\t{exam}"
        )
    for name in sorted(summary.failed_exam):
        person = summary.annotators[name]
        print(
            f"annotator {name} failed the examination ({person.examined_right} of "
            f"{person.examined} right, pass mark {summary.pass_mark:g}): excluded from the vote"
        )
    counts = overlap_counts(summary.overlap)
    shown = ", ".join(f"{items} item(s) with {votes}" for votes, items in counts.items())
    print(f"overlap (votes per item): {shown}")
    if summary.overlap_asked:
        short = sum(n < summary.overlap_asked for n in summary.overlap.values())
        if short:
            print(f"{short} item(s) with fewer than the {summary.overlap_asked} votes asked for")
    if summary.training_answers:
        print(f"{summary.training_answers} answer(s) to training items ignored")
    if summary.ties:
        print(f"{len(summary.ties)} tie(s), {TIE_RULE}: {', '.join(summary.ties)}")


def run(args: argparse.Namespace) -> int:
    """Turn annotations into a `human` results shard; the exit code."""
    summary = import_annotations(
        args.annotations,
        args.items,
        args.out,
        args.key,
        args.min_control_accuracy,
        args.min_qualification_accuracy,
    )
    print_summary(summary)
    print(f"human results in {summary.shard}")
    return 0
