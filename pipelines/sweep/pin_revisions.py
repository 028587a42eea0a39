"""`pin-revisions`: write into each hub model's config the commit its revision points to now.

Every config under `--models` whose revision is a branch or tag (`main`) is resolved on the
hub (HF_ENDPOINT honoured) and its `revision:` line rewritten to the commit, with the old
name in a comment; everything else in the file stays as it was. All are resolved before any
file is written: a hub that cannot answer for one model leaves every file untouched (exit 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipelines.command_line.args import existing_dir
from pipelines.engines.models.config_yaml import load_config
from pipelines.engines.models.model_schema import ModelConfigError
from pipelines.noregeo.generate import parse_list
from pipelines.sweep.revisions import HubError, on_hub, pin_config_text, resolve
from store.atomic import write_bytes_atomic
from store.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `python -m pipelines pin-revisions`."""
    parser.add_argument(
        "--models", type=existing_dir, default=Path("configs/models"),
        help="folder of model config YAML files (rewritten in place)",
    )  # fmt: skip
    parser.add_argument("--only", default=None, help="comma-separated config names")
    parser.add_argument("--dry-run", action="store_true", help="print the commits, write nothing")


def run(args: argparse.Namespace) -> int:
    """Resolve every unpinned hub revision, then rewrite the files."""
    files = sorted(args.models.rglob("*.y*ml"))
    try:
        configs = [(path, load_config(path)) for path in files]
    except ModelConfigError as err:
        raise UsageError(str(err)) from err
    if args.only is not None:
        names = set(parse_list(args.only, [c.name for _, c in configs], "--only model names"))
        configs = [(p, c) for p, c in configs if c.name in names]
    todo = [(p, c) for p, c in configs if on_hub(c)]
    resolved = []
    for path, cfg in todo:
        try:
            resolved.append((path, cfg, resolve(cfg.repo, cfg.revision)))
        except HubError as err:
            raise UsageError(f"--models {path}: {err}; nothing was written") from err
    for path, cfg, commit in resolved:
        print(f"{cfg.name}: {cfg.revision} -> {commit}")
        if not args.dry_run:
            text = path.read_text(encoding="utf-8")
            write_bytes_atomic(path, pin_config_text(text, commit, cfg.revision).encode())
    print(f"{len(resolved)} config(s) {'to pin' if args.dry_run else 'pinned'}; "
          f"{len(configs) - len(resolved)} already pinned or not on the hub")  # fmt: skip
    return 0
