"""`geosee list-models`: the model configs, with what each runs on and whether it is usable."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipelines.command_line.args import existing_dir
from pipelines.engines.models.config_yaml import CONFIG_DIR, load_configs
from pipelines.engines.models.model_schema import ModelConfigError
from pipelines.terminal.output import add_format_argument, print_rows
from store.errors import UsageError

COLUMNS = ("name", "engine", "modality", "setups", "gpus", "verified", "blocked", "repo")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `list-models` command's options."""
    parser.add_argument(
        "--configs",
        type=existing_dir,
        default=CONFIG_DIR,
        help="folder of model config YAML files (default: the repository's configs/models)",
    )
    add_format_argument(parser)


def model_rows(folder: Path) -> list[dict[str, Any]]:
    """One row per config, by name. `verified`: a run of it has been checked to work;
    `blocked`: why it cannot run, if it cannot."""
    try:
        configs = load_configs(folder)
    except ModelConfigError as err:
        raise UsageError(str(err)) from err
    return [
        {
            "name": cfg.name,
            "engine": cfg.engine,
            "modality": cfg.modality,
            "setups": list(cfg.setups),
            "gpus": cfg.gpus,
            "verified": cfg.verified,
            "blocked": cfg.blocked or "",
            "repo": cfg.repo,
        }
        for cfg in configs
    ]


def run(args: argparse.Namespace) -> int:
    """Print the model table; the exit code."""
    print_rows(model_rows(args.configs), COLUMNS, args.format)
    return 0
