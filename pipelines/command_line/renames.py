"""Flags that were renamed (issue 14): an old name gets one line saying what to use instead,
not argparse's bare "unrecognized arguments".

A flag name means one thing in every command: `--item-seed` seeds the items,
`--sampling-seed` the engine, `--per-task` counts items per task; inputs are `--items`,
`--annotations` ... So `--seed` and `--limit` are gone, and human-import's annotations file
moved from a position to `--annotations`, human-export's item table to `--items`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from pipelines.terminal.suggest import did_you_mean
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

# lm-eval's flags that have another name here, in every command that has the other one
# (issue 39: users of lm-eval type them first). Its underscore spellings of our own flags
# (`--per_task`, `--log_samples`) are taken as the hyphenated ones (`hyphenated`).
LM_EVAL: dict[str, tuple[str, str]] = {
    "--output_path": ("--out", "--out RESULTS (the results root)"),
    "--output-path": ("--out", "--out RESULTS (the results root)"),
    "--model_args": (
        "--model",
        "--model (a config, checkpoint folder or hub id) and the "
        "model config's YAML for its settings",
    ),
}

# command -> the flag an input that used to be positional is given with now.
MOVED_POSITIONALS: dict[str, str] = {"human-import": "--annotations", "human-export": "--items"}


def parse_command(
    name: str, parser: argparse.ArgumentParser, argv: list[str]
) -> argparse.Namespace:
    """`parser.parse_args(argv)`, but an old flag name is refused with what to use instead,
    lm-eval's underscore spellings are taken as our hyphenated flags, and an unknown flag
    is answered with the closest known ones."""
    known = parser._option_string_actions
    argv = hyphenated(argv, known)
    for arg in argv:
        if arg == "--":  # the rest are values, never flags
            break
        flag = arg.split("=", 1)[0]
        hint = RENAMED.get(name, {}).get(flag)
        # Only a flag the parser no longer knows: a table row never shadows a live option.
        if hint is not None and flag not in known:
            raise UsageError(f"{flag} was renamed: use {hint}")
        ours = LM_EVAL.get(flag)
        if ours is not None and ours[0] in known and flag not in known:
            raise UsageError(f"{flag} is lm-eval's name: here, use {ours[1]}")
    moved = MOVED_POSITIONALS.get(name)
    try:
        return parser.parse_args(argv)
    except UsageError as err:
        unknown = _unknown_flag(str(err))
        if unknown is not None and moved is None:
            hint = did_you_mean(unknown, [f for f in known if f.startswith("--")])
            if hint:
                raise UsageError(f"{err}{hint}") from err
        given = any(a.split("=", 1)[0] == moved for a in argv)
        # The old call (`human-import FILE --items ...`) fails as a missing flag or a stray
        # argument; any other error (a bad --items) is argparse's own, and clearer.
        text = str(err)
        if moved is None or given or not (moved in text or "unrecognized" in text):
            raise
        raise UsageError(
            f"{name} takes its input as {moved} (no longer positional): {text}"
        ) from err


def hyphenated(argv: list[str], known: Mapping[str, object]) -> list[str]:
    """`argv` with each `--some_flag[=value]` the parser lacks spelled `--some-flag` where
    the parser has that one (lm-eval's `--per_task`, `--log_samples`); values after `--`
    and after a flag that takes them stay as given (a value never starts with `--` here)."""
    spelled: list[str] = []
    for position, arg in enumerate(argv):
        if arg == "--":
            return [*spelled, *argv[position:]]
        flag, equals, value = arg.partition("=")
        if flag.startswith("--") and "_" in flag and flag not in known:
            ours = flag.replace("_", "-")
            if ours in known:
                arg = f"{ours}{equals}{value}"
        spelled.append(arg)
    return spelled


def _unknown_flag(message: str) -> str | None:
    """The first flag in argparse's "unrecognized arguments: ..." message, else None."""
    _, found, rest = message.partition("unrecognized arguments: ")
    words = rest.split()
    if not found or not words or not words[0].startswith("--"):
        return None
    return words[0].split("=", 1)[0]
