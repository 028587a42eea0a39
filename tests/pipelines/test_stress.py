"""Stress: `evaluate` killed with SIGKILL (the driver's whole process group) at a different
point each time and resumed at once, 20 times. A late shard of the killed run must never
land beside the resumed run's rows: 0 duplicate request keys in the raw shards, and exactly
the keys of an uninterrupted run. `make stress` (deselected from the normal suite)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pipelines.cli import main
from store.records import model_dir
from tests.pipelines.processes import kill_evaluate_after
from tests.pipelines.raw_shards import raw_keys

# GEOSEE_STRESS_REPEATS runs fewer (or more) repeats, e.g. to try the test itself quickly.
REPEATS = int(os.environ.get("GEOSEE_STRESS_REPEATS", "20"))
TASKS = "C-BCT-CT,C-SYM-SST,N-ECL-SLT,U-PAP-PT,U-SYM-ST"
ROWS = 5 * 4 * 3  # tasks x --per-task x setups


def _args(items: Path) -> list[str]:
    return [
        *("--items", str(items), "--engine", "random", "--model", "random"),
        *("--tasks", TASKS, "--per-task", "4", "--batch-size", "3", "--shard-rows", "3"),
    ]


def _kill_after(items: Path, out: Path, shards: int) -> None:
    """Start `evaluate` in its own session and SIGKILL the session once `shards` shards are
    on disk (or the run ended)."""
    kill_evaluate_after(
        [*_args(items), "--baseline-delay", "0.2", "--out", str(out)],
        model_dir(out, "noregeo", "random"),
        shards,
        timeout_s=300,
    )


@pytest.mark.slow
@pytest.mark.stress
@pytest.mark.timeout(3600)
def test_kill_and_resume_twenty_times_leaves_no_duplicate_and_no_gap(
    small_items: Path, tmp_path: Path
) -> None:
    reference = tmp_path / "reference"
    assert main(["evaluate", *_args(small_items), "--out", str(reference)]) == 0
    want = raw_keys(model_dir(reference, "noregeo", "random"))
    assert len(want) == len(set(want)) == ROWS

    report = []
    for rep in range(REPEATS):
        out = tmp_path / f"rep{rep}"
        root = model_dir(out, "noregeo", "random")
        started = time.monotonic()
        _kill_after(small_items, out, shards=1 + rep % 5)
        at_kill = len(raw_keys(root)) if root.exists() else 0
        # Resumed at once, while the killed run's workers may still be finishing batches.
        assert main(["evaluate", *_args(small_items), "--out", str(out)]) == 0
        got = raw_keys(root)
        report.append(f"rep {rep}: {at_kill} rows at the kill, {len(got)} after the resume, "
                      f"{time.monotonic() - started:.0f} s")  # fmt: skip
        assert len(got) - len(set(got)) == 0, report[-1]
        assert sorted(got) == sorted(want), report[-1]
    print("\n".join(report))
    # The scenario was exercised: most kills landed before the end of the run.
    assert sum(0 < int(line.split()[2]) < ROWS for line in report) >= REPEATS // 2, report
