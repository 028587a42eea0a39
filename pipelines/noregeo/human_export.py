"""`python -m pipelines human-export ITEMS --out DIR`: dotted items as annotator pages.

Pages of 10 (JSON + PNG), answers only in DIR/key.json; see pipelines/noregeo/human.py.
"""

from __future__ import annotations

import argparse

from pipelines.cli_args import existing_dir, non_negative_int, output_dir
from pipelines.noregeo.human import PAGE_SIZE, export_pages


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `human-export` command's options."""
    parser.add_argument("items", type=existing_dir, help="item directory from `generate`")
    parser.add_argument("--out", type=output_dir, required=True, help="new directory for pages")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the item order")


def run(args: argparse.Namespace) -> int:
    """Write the annotator pages and their answer key; the exit code."""
    pages = export_pages(args.items, args.out, args.seed)
    print(f"{pages} pages of up to {PAGE_SIZE} items in {args.out}; answers in {args.out}/key.json")
    return 0
