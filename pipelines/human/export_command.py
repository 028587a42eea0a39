"""`python -m pipelines human-export --items ITEMS --out DIR`: dotted items as annotator pages.

Static HTML pages of 10 (DIR/index.html, DIR/page-NNN.html) with a CSV download, by default
as the paper ran its evaluation: a training page, an examination page, control items mixed
into every page from their own pool, 10 minutes per page and 3 annotators per item; the
answer key and the item roles outside DIR (`--key`, default DIR.key.json); see
pipelines/human/export_pages.py and pipelines/human/quality.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipelines.command_line.args import (
    SECONDS_MAX,
    existing_dir,
    int_in,
    output_dir,
    positive_int,
    seed_int,
    share,
    share_below_one,
)
from pipelines.human.export_pages import export_pages
from pipelines.human.key import default_key
from pipelines.human.quality import (
    DEFAULT_OVERLAP,
    DEFAULT_PAGE_TIME_LIMIT,
    DEFAULT_QUALIFICATION_PASS,
    PAGE_SIZE,
    controls_per_page,
)

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
        "--control-seed",
        type=seed_int,
        default=None,
        help="seed the training, examination and control items are drawn with, by the item "
        "table's generators (default: the item table's seed + 1; never its seed, so none of "
        "them is a scored item)",
    )
    parser.add_argument(
        "--control-share",
        type=share_below_one,
        default=DEFAULT_CONTROL_SHARE,
        metavar="S",
        help=f"share of every page's {PAGE_SIZE} slots given to control items (known "
        "answers, drawn apart from the scored items and stratified by task; human-import "
        f"measures annotators on them), 0 <= S < 1 (default {DEFAULT_CONTROL_SHARE}; 0: none)",
    )
    parser.add_argument(
        "--training-page",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"a training page of {PAGE_SIZE} pool items with their answers shown, not "
        "scored (default: on, as the paper)",
    )
    parser.add_argument(
        "--qualification-page",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"an examination page of {PAGE_SIZE} pool items; an annotator below "
        "--qualification-pass on it is excluded at import (default: on, as the paper)",
    )
    parser.add_argument(
        "--qualification-pass",
        type=share,
        default=DEFAULT_QUALIFICATION_PASS,
        metavar="A",
        help="the examination's pass mark, a share of its items right, 0..1 (default "
        f"{DEFAULT_QUALIFICATION_PASS}; the paper does not state Toloka's), recorded in the "
        "key and shown on the page",
    )
    parser.add_argument(
        "--page-time-limit",
        type=int_in(0, int(SECONDS_MAX)),  # 0: no limit
        default=DEFAULT_PAGE_TIME_LIMIT,
        metavar="SECONDS",
        help="time per page, recorded in the pages and the key; the fields lock when it "
        f"runs out (default {DEFAULT_PAGE_TIME_LIMIT}: the paper's 10 minutes; 0: none)",
    )
    parser.add_argument(
        "--overlap",
        type=positive_int,
        default=DEFAULT_OVERLAP,
        help="annotators each page is for, shown on the index and recorded in the key; "
        f"human-import reports items with fewer votes (default {DEFAULT_OVERLAP}, the paper's "
        "main text; its appendix says 10)",
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
        args.page_time_limit or None,
        args.qualification_page,
        args.qualification_pass,
        args.overlap,
        args.control_seed,
    )
    controls = controls_per_page(args.control_share)
    extra = [
        name
        for name, on in (("a training page", args.training_page),
                         ("an examination page", args.qualification_page))
        if on
    ]  # fmt: skip
    extras = f" and {' and '.join(extra)}" if extra else ""
    print(
        f"{pages} pages of up to {PAGE_SIZE} items ({controls} control item(s) each){extras}: "
        f"open {args.out}/index.html; answer key in {key} (keep it from annotators)"
    )
    return 0
