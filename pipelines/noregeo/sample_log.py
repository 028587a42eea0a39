"""`evaluate --log-samples DIR`: every result row of the model as JSON lines, one file per
setup (`DIR/<model slug>/<setup>.jsonl`), as lm-eval's `--log_samples` writes them: what was
asked, what came back, how it was read and scored. The Parquet shards stay the source; this
is a copy for reading with `jq` or a text editor, rewritten whole at the end of each run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl

from store.atomic import write_bytes_atomic
from store.errors import UsageError
from store.records import model_slug

# The columns a sample line holds, in this order; `verdict` is derived from valid/correct.
SAMPLE_COLUMNS = (
    "request_key",
    "item_id",
    "task",
    "setup",
    "answer_type",
    "options",
    "system_prompt",
    "prompt",
    "generated_text",
    "parsed",
    "answer",
    "valid",
    "correct",
    "parse_error",
    "engine_error",
    # What the answer cost, as lm-eval's sample logs give it: tokens in and out (0 for
    # engines that read no tokens) and the engine's seconds for the row.
    "num_input_tokens",
    "num_generated_tokens",
    "time_taken_llm",
)


def check_sample_dir(folder: Path) -> None:
    """UsageError unless `folder` is (or can be made) a writable directory; before Ray starts.

    Writes nothing (the files are written at the end of the run): a run refused later for
    another reason leaves no empty folder behind. The nearest existing folder on the way
    must be a folder we may write into; a path through a regular file never is, for root
    too (whom permission bits do not stop)."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--log-samples {folder} is a file; give a directory")
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"--log-samples {folder} is not writable ({existing} is a file)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(
            f"--log-samples {folder} is not writable (no write permission on {existing})"
        )


def verdict(row: dict[str, object]) -> str:
    """One word per row: engine_error, invalid, correct or wrong."""
    if row.get("engine_error"):
        return "engine_error"
    if not row.get("valid"):
        return "invalid"
    return "correct" if row.get("correct") else "wrong"


def write_sample_logs(results: pl.DataFrame, model: str, folder: Path) -> list[Path]:
    """The JSONL files of one model's rows, one per setup, sorted by task and item."""
    written = []
    present = [c for c in SAMPLE_COLUMNS if c in results.columns]
    for setup in sorted(results["setup"].unique().to_list()):
        rows = results.filter(pl.col("setup") == setup).sort(["task", "item_id"]).select(present)
        lines = (
            json.dumps({**row, "verdict": verdict(row)}, ensure_ascii=False) + "\n"
            for row in rows.iter_rows(named=True)
        )
        path = folder / model_slug(model) / f"{setup}.jsonl"
        write_bytes_atomic(path, "".join(lines).encode("utf-8"))
        written.append(path)
    return written
