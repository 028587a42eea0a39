"""Fixtures shared by the report tests: the baselines' report, and one with models beside them
(built once for the folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines import cli
from tests.pipelines.report.report_support import (
    _register,
    baseline_results,
    with_models,
)


@pytest.fixture(scope="package")
def model_report(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The report of the baselines plus MODELS."""
    with pytest.MonkeyPatch.context() as mp:
        _register(mp)
        base = tmp_path_factory.getbasetemp()
        results = with_models(baseline_results(small_items, base), base)
        out = tmp_path_factory.mktemp("model_report")
        assert cli.main(["report", str(results), "--out", str(out)]) == 0
    return results, out


@pytest.fixture(scope="package")
def report(small_items: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    with pytest.MonkeyPatch.context() as mp:
        _register(mp)
        results = baseline_results(small_items, tmp_path_factory.getbasetemp())
        out = tmp_path_factory.mktemp("report")
        assert cli.main(["report", str(results), "--out", str(out)]) == 0
    return results, out
