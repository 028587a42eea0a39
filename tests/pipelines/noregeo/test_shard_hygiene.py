"""Shard readers: a corrupt shard is quarantined, named and skipped (its keys recomputed on
the next run); a row repeated under another shard name is counted once."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

from pipelines.geobuild.rows import RoundWriter, finished_problems, read_round
from pipelines.geobuild.summarize import problem_outcomes
from pipelines.geobuild.summarize import summary_tables as geobuild_tables
from pipelines.noregeo.results import ShardWriter
from pipelines.noregeo.summarize import load_results, summary_tables
from store.records import finished_keys, model_dir, write_run_record
from store.shards import QUARANTINE, read_shards, shard_files
from tests.pipelines.noregeo.result_rows import request_key, scored_rows


@pytest.fixture
def noregeo(tmp_path: Path) -> tuple[Path, Path]:
    """(out, model dir): two shards of three rows in setup=text, one of two in setup=full."""
    out = tmp_path / "results"
    root = model_dir(out, "noregeo", "m")
    writer = ShardWriter(str(root), "m", "rev", "oracle")
    writer(pa.Table.from_pylist(scored_rows("text", 0, 3)))
    writer(pa.Table.from_pylist(scored_rows("text", 3, 3)))
    writer(pa.Table.from_pylist(scored_rows("full", 6, 2)))
    return out, root


def _corrupt_bytes(kind: str, good: Path) -> bytes:
    data = good.read_bytes()
    return {"truncated": data[: len(data) // 2], "empty": b"", "garbage": b"not parquet " * 40}[
        kind
    ]


def _corrupt(path: Path, kind: str, good: Path) -> Path:
    path.write_bytes(_corrupt_bytes(kind, good))
    return path


KINDS = ["truncated", "empty", "garbage"]


@pytest.mark.parametrize("kind", KINDS)
def test_corrupt_shard_keys_are_unfinished_and_the_file_quarantined(
    noregeo: tuple[Path, Path], kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, root = noregeo
    good = shard_files(root)
    bad = _corrupt(root / "setup=text" / "part-bad.parquet", kind, good[0])
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        keys = finished_keys(root)
    assert keys == {request_key(k) for k in range(8)}
    assert not bad.exists()
    moved = root / QUARANTINE / "setup=text__part-bad.parquet"
    assert moved.read_bytes() == _corrupt_bytes(kind, good[0])
    assert str(bad) in caplog.text and "quarantine" in caplog.text
    # Quarantined files are no shards: the next reader neither reads nor moves them again.
    assert shard_files(root) == good
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        assert finished_keys(root) == keys
    assert caplog.text == ""


@pytest.mark.parametrize("kind", KINDS)
def test_load_results_skips_a_corrupt_shard_and_warns_naming_it(
    noregeo: tuple[Path, Path], kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    out, root = noregeo
    clean = summary_tables(load_results(out))
    bad = _corrupt(root / "setup=full" / "part-bad.parquet", kind, shard_files(root)[0])
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        df = load_results(out, model="m")
    assert df.height == 8
    assert str(bad) in caplog.text
    assert (root / QUARANTINE / "setup=full__part-bad.parquet").exists()
    for name, table in summary_tables(load_results(out)).items():
        assert_frame_equal(table, clean[name])


def test_a_shard_corrupted_again_keeps_both_copies(noregeo: tuple[Path, Path]) -> None:
    _, root = noregeo
    good = shard_files(root)[0]
    for _ in range(2):
        _corrupt(root / "setup=text" / "part-bad.parquet", "garbage", good)
        finished_keys(root)
    names = sorted(p.name for p in (root / QUARANTINE).iterdir())
    assert names == ["setup=text__part-bad.parquet", "setup=text__part-bad.parquet.1"]


def test_a_shard_lacking_the_column_asked_for_is_quarantined(noregeo: tuple[Path, Path]) -> None:
    _, root = noregeo
    foreign = root / "setup=text" / "part-foreign.parquet"
    pl.DataFrame({"something": [1]}).write_parquet(foreign)
    assert finished_keys(root) == {request_key(k) for k in range(8)}
    assert (root / QUARANTINE / "setup=text__part-foreign.parquet").exists()


def test_a_copied_shard_changes_no_summary_and_is_reported(
    noregeo: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    out, root = noregeo
    clean = load_results(out)
    first = shard_files(root / "setup=text")[0]
    shutil.copy(first, first.with_name("part-zzzz-copy.parquet"))
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        again = load_results(out)
    assert "3 duplicate row(s) by request_key" in caplog.text
    assert_frame_equal(again, clean)
    assert again["request_key"].n_unique() == again.height == 8
    clean_tables = summary_tables(clean)
    for name, table in summary_tables(again).items():
        assert_frame_equal(table, clean_tables[name])
    assert finished_keys(root) == set(clean["request_key"])


def _write_raw(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows).write_parquet(path)


def test_duplicates_keep_the_answered_row_then_the_smallest_shard_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "model=m" / "setup=text"
    row = {"request_key": "k", "generated_text": "", "engine_error": None}
    _write_raw(root / "part-a.parquet", [row | {"generated_text": "a", "engine_error": "boom"}])
    _write_raw(root / "part-b.parquet", [row | {"generated_text": "b"}])
    _write_raw(root / "part-c.parquet", [row | {"generated_text": "c"}])
    _write_raw(root / "part-d.parquet", [{"request_key": "solo", "generated_text": "d"}])
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        rows = read_shards(tmp_path, ["request_key", "generated_text"])
    assert rows is not None
    assert rows.rows() == [("k", "b"), ("solo", "d")]
    assert "2 duplicate row(s)" in caplog.text


def _round_batch(rows: list[dict[str, object]]) -> dict[str, np.ndarray]:
    batch = {k: np.array([r[k] for r in rows], dtype=object) for k in rows[0]}
    batch["sampling_params"] = np.array([{}] * len(rows), dtype=object)
    return batch


@pytest.fixture
def geobuild(tmp_path: Path) -> tuple[Path, Path]:
    """(out, model dir): round 1 with problems 1-3 in two shards, round 2 with problem 1."""
    root = tmp_path / "geobuild" / "model=m"
    write_run_record(root, {"problems": [{"id": str(i)} for i in (1, 2, 3)]})

    def row(problem: int, round_number: int, success: bool) -> dict[str, object]:
        return {
            "problem_id": str(problem),
            "round": round_number,
            "request_key": f"p{problem}r{round_number}",
            "error_category": None if success else "syntax",
            "verdict": '{"missing_objects": [], "failed_conditions": []}',
            "object_score": 1.0 if success else 0.0,
            "condition_score": 1.0 if success else 0.0,
            "success": success,
        }

    RoundWriter(str(root / "round=1"), {"model": "m"})(
        _round_batch([row(1, 1, False), row(2, 1, True)])
    )
    RoundWriter(str(root / "round=1"), {"model": "m"})(_round_batch([row(3, 1, False)]))
    RoundWriter(str(root / "round=2"), {"model": "m"})(_round_batch([row(1, 2, True)]))
    return tmp_path, root


@pytest.mark.parametrize("kind", KINDS)
def test_corrupt_round_shard_is_quarantined_and_its_problems_rerun(
    geobuild: tuple[Path, Path], kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    out, root = geobuild
    clean = problem_outcomes(out)
    bad = _corrupt(root / "round=1" / "part-bad.parquet", kind, shard_files(root)[0])
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        assert finished_problems(root, 1) == {"1", "2", "3"}
    assert str(bad) in caplog.text
    assert (root / QUARANTINE / "round=1__part-bad.parquet").exists()
    assert read_round(root, 1)["problem_id"].to_list() == ["1", "2", "3"]
    assert_frame_equal(problem_outcomes(out), clean)


def test_corrupt_round_shard_drops_its_problems_from_finished(
    geobuild: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    out, root = geobuild
    sizes = {p: len(pl.read_parquet(p)) for p in shard_files(root / "round=1")}
    lone = next(p for p, n in sizes.items() if n == 1)  # the shard holding problem 3 alone
    lone.write_bytes(lone.read_bytes()[:20])
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        tables = geobuild_tables(out)  # the summaries read it first: no traceback
    assert str(lone) in caplog.text
    assert finished_problems(root, 1) == {"1", "2"}  # problem 3 runs again
    problems = tables["problems"]
    assert problems.filter(pl.col("problem_id") == "3")["error_category"].item() == "not_run"


def test_a_copied_round_shard_changes_no_geobuild_summary(
    geobuild: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    out, root = geobuild
    clean_round, clean_tables = read_round(root, 1), geobuild_tables(out)
    first = shard_files(root / "round=1")[0]
    shutil.copy(first, first.with_name("part-zzzz-copy.parquet"))
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        assert_frame_equal(read_round(root, 1), clean_round)
        tables = geobuild_tables(out)
    assert "duplicate row(s) by request_key" in caplog.text
    for name, table in tables.items():
        assert_frame_equal(table, clean_tables[name])
