"""`python -m pipelines human-import --annotations FILE.csv --items ITEMS --out RESULTS`.

Majority vote per item, scored like a model and stored as the model `human` (dotted setup);
see pipelines/noregeo/human.py.
"""

from __future__ import annotations

import argparse

from pipelines.cli_args import existing_dir, existing_file, output_dir
from pipelines.noregeo.human import TIE_RULE, import_annotations


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `human-import` command's options."""
    parser.add_argument(
        "--annotations",
        type=existing_file,
        required=True,
        metavar="FILE",
        help="CSV with item_id, annotator, answer",
    )
    parser.add_argument(
        "--items", type=existing_dir, required=True, help="the exported item directory"
    )
    parser.add_argument(
        "--out", type=output_dir, required=True, metavar="RESULTS",
        help="results root; the votes go under RESULTS/noregeo/model=human",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Turn annotations into a `human` results shard; the exit code."""
    shard, ties = import_annotations(args.annotations, args.items, args.out)
    if ties:
        print(f"{len(ties)} tie(s), {TIE_RULE}: {', '.join(ties)}")
    print(f"human results in {shard}")
    return 0
