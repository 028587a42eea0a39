"""Flags that were renamed (issue 14): an old name gets one line saying what to use instead,
not argparse's bare "unrecognized arguments".

A flag name means one thing in every command: `--item-seed` seeds the items,
`--sampling-seed` the engine, `--per-task` counts items per task; inputs are `--items`,
`--annotations` ... So `--seed` and `--limit` are gone, and human-import's annotations file
moved from a position to `--annotations`, human-export's item table to `--items`.
"""

from __future__ import annotations

import argparse

from store.errors import UsageError

__all__ = ["MOVED_POSITIONALS", "RENAMED", "parse_command"]

ITEM_SEED = "--item-seed (the items' seed)"
SAMPLING_SEED = "--sampling-seed (the engine's)"

# command -> old flag -> what to use instead (the text after "use").
RENAMED: dict[str, dict[str, str]] = {
    "generate": {"--seed": ITEM_SEED},
    "show-item": {"--seed": ITEM_SEED},
    "evaluate": {
        "--seed": SAMPLING_SEED,
        "--limit": "--per-task (items per task, as in generate and sweep)",
    },
    "geobuild": {
        "--seed": SAMPLING_SEED,
        "--limit": "--first (the first N problems)",
    },
    "sweep": {"--seed": f"{ITEM_SEED} or {SAMPLING_SEED}"},
    "tiny-model": {"--seed": "--weights-seed (the weight initialisation's seed)"},
    "human-export": {"--seed": "--order-seed (the seed of the item order)"},
    "probe": {"--limit": "--max-trials (pending trials to run at most)"},
    # Issue 26: wall-clock budgets made the audit depend on the machine's load.
    "geobuild-solve": {
        "--conflict-seconds": "--conflict-steps (a work budget, the same at any load)",
        "--solve-seconds": "--restarts (the starts are bounded by their number, not by time)",
    },
}

# command -> the flag an input that used to be positional is given with now.
MOVED_POSITIONALS: dict[str, str] = {"human-import": "--annotations", "human-export": "--items"}


def parse_command(
    name: str, parser: argparse.ArgumentParser, argv: list[str]
) -> argparse.Namespace:
    """`parser.parse_args(argv)`, but an old flag name is refused with what to use instead."""
    for arg in argv:
        if arg == "--":  # the rest are values, never flags
            break
        flag = arg.split("=", 1)[0]
        hint = RENAMED.get(name, {}).get(flag)
        # Only a flag the parser no longer knows: a table row never shadows a live option.
        if hint is not None and flag not in parser._option_string_actions:
            raise UsageError(f"{flag} was renamed: use {hint}")
    moved = MOVED_POSITIONALS.get(name)
    try:
        return parser.parse_args(argv)
    except UsageError as err:
        given = any(a.split("=", 1)[0] == moved for a in argv)
        # The old call (`human-import FILE --items ...`) fails as a missing flag or a stray
        # argument; any other error (a bad --items) is argparse's own, and clearer.
        text = str(err)
        if moved is None or given or not (moved in text or "unrecognized" in text):
            raise
        raise UsageError(
            f"{name} takes its input as {moved} (no longer positional): {text}"
        ) from err
