"""bench/study_scale.py --quick end to end (issue 50): real generate, evaluate and geobuild runs,
synthetic models made from them, every step timed; minutes, so `make test-study-scale` only."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from bench import study_scale
from pipelines.noregeo.summarize import load_results

pytestmark = pytest.mark.study_scale


def test_quick_run_writes_well_formed_results_and_prints_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert study_scale.main(["--quick", "--no-s3", "--work", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    for step in ("summarize", "geobuild-summarize", "report", "samples pages"):
        assert f"| {step} | local |" in table
    assert "growth 2 -> 4" in table
    rows = load_results(tmp_path / "results-4-4")
    assert rows["model"].n_unique() == 4 and rows.height == 4 * 4 * 25 * 3
    # Each model's accuracy follows its set share of oracle answers (plus chance).
    names = study_scale.model_names(4)
    accuracy = dict(rows.group_by("model").agg(pl.col("correct").mean()).iter_rows())
    shares = dict(zip(names, study_scale.accuracies(4), strict=True))
    assert sorted(names, key=accuracy.get) == sorted(names, key=shares.get)
    assert (tmp_path / "out-4-4-local" / "report" / "samples.html").is_file()
