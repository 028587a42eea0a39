"""`python -m pipelines human-export --items ITEMS --out DIR`: dotted items as annotator pages.

Static HTML pages of 10 (DIR/index.html, DIR/page-NNN.html) with a CSV download, control
items mixed into every page, an optional training page and per-page time limit; the answer
key and the item roles outside DIR (`--key`, default DIR.key.json); see
pipelines/noregeo/human.py and pipelines/noregeo/human_quality.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipelines.cli_args import (
    existing_dir,
    output_dir,
    positive_int,
    seed_int,
    share_below_one,
)
from pipelines.noregeo.human import default_key, export_pages
from pipelines.noregeo.human_quality import PAGE_SIZE, controls_per_page

DEFAULT_CONTROL_SHARE = 0.2  # 2 of every 10 items: the paper's pages held control tasks


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
        help="answer key JSON (answers and item roles), outside --out "
        "(default: OUT.key.json beside OUT); human-import --key reads it",
    )
    parser.add_argument("--order-seed", type=seed_int, default=0, help="seed of the item order")
    parser.add_argument(
        "--control-share",
        type=share_below_one,
        default=DEFAULT_CONTROL_SHARE,
        metavar="S",
        help=f"share of every page's {PAGE_SIZE} slots given to control items (known "
        "answers, not scored; human-import measures annotators on them), 0 <= S < 1 "
        f"(default {DEFAULT_CONTROL_SHARE}; 0: none)",
    )
    parser.add_argument(
        "--training-page",
        action="store_true",
        help=f"add a training page of {PAGE_SIZE} items with their answers shown (not scored)",
    )
    parser.add_argument(
        "--page-time-limit",
        type=positive_int,
        default=None,
        metavar="SECONDS",
        help="time per page, recorded in the pages and the key; the fields lock when it "
        "runs out (default: none)",
    )


def run(args: argparse.Namespace) -> int:
    """Write the annotator pages and their answer key; the exit code."""
    key = args.key if args.key is not None else default_key(args.out)
    pages = export_pages(
        args.items,
        args.out,
        key,
        args.order_seed,
        args.control_share,
        args.training_page,
        args.page_time_limit,
    )
    controls = controls_per_page(args.control_share)
    training = " and a training page" if args.training_page else ""
    print(
        f"{pages} pages of up to {PAGE_SIZE} items ({controls} control item(s) each){training}: "
        f"open {args.out}/index.html; answer key in {key} (keep it from annotators)"
    )
    return 0
