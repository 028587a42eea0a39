"""The `--dataset`/`--lang` pair every GeoBuild command takes, and loading it with errors
that name the flag (exit 2), not a traceback."""

from __future__ import annotations

import argparse

from geometry.dsl.dataset import LANGUAGES, Problem, load_problems
from store.errors import UsageError


def add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    """`--dataset` (required) and `--lang`."""
    parser.add_argument(
        "--dataset",
        required=True,
        help="geoqa3_dataset_{en,zh}.json, or the directory that holds them",
    )
    parser.add_argument("--lang", default="en", choices=LANGUAGES, help="data set language")


def load_dataset(dataset: str, lang: str) -> list[Problem]:
    """The problems of `--dataset` in `--lang`; UsageError naming the flag when unreadable."""
    try:
        return load_problems(dataset, lang)
    except FileNotFoundError as err:
        raise UsageError(f"{err} (pass --dataset the data file or its directory)") from err
    except ValueError as err:
        raise UsageError(f"--dataset {dataset}: {err}") from err
