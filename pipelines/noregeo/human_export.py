"""`python -m pipelines human-export --items ITEMS --out DIR`: dotted items as annotator pages.

Static HTML pages of 10 (DIR/index.html, DIR/page-NNN.html) with a CSV download; the answer
key outside DIR (`--key`, default DIR.key.json); see pipelines/noregeo/human.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipelines.cli_args import existing_dir, output_dir, seed_int
from pipelines.noregeo.human import PAGE_SIZE, default_key, export_pages


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `human-export` command's options."""
    parser.add_argument(
        "--items", type=existing_dir, required=True, help="item directory from `generate`"
    )
    parser.add_argument(
        "--out",
        type=output_dir,
        required=True,
        help="new directory for the pages (index.html, page-NNN.html): what annotators get",
    )
    parser.add_argument(
        "--key",
        type=Path,
        default=None,
        help="answer key JSON, outside --out (default: OUT.key.json beside OUT)",
    )
    parser.add_argument("--order-seed", type=seed_int, default=0, help="seed of the item order")


def run(args: argparse.Namespace) -> int:
    """Write the annotator pages and their answer key; the exit code."""
    key = args.key if args.key is not None else default_key(args.out)
    pages = export_pages(args.items, args.out, key, args.order_seed)
    print(
        f"{pages} pages of up to {PAGE_SIZE} items: open {args.out}/index.html; "
        f"answer key in {key} (keep it from annotators)"
    )
    return 0
