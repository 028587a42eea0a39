"""Item tables are verified against their manifest before Ray starts (issue 26, item 4):
a shard changed after `generate`, a missing shard and a wrongly typed column are each one
line naming the file, exit 2, and nothing written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipelines.cli import main
from pipelines.noregeo.generate import MANIFEST, SHARD_FILES
from store.atomic import write_parquet_atomic

TASK = "C-BCT-CT"


@pytest.fixture
def items(small_items: Path, tmp_path: Path) -> Path:
    """A private copy of the session's item table (so a test may spoil it)."""
    copy = tmp_path / "items"
    shutil.copytree(small_items, copy)
    return copy


def _evaluate(items: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run evaluate on TASK; the one error line it must end with (exit 2)."""
    capsys.readouterr()
    args = ["evaluate", "--items", str(items), "--engine", "oracle", "--model", "oracle"]
    code = main([*args, "--tasks", TASK, "--per-task", "2", "--out", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), lines
    assert not out.exists(), "a refused run wrote something"
    return lines[0]


def test_the_manifest_records_each_shard_file_hash(small_items: Path) -> None:
    manifest = json.loads((small_items / MANIFEST).read_text())
    recorded = manifest[SHARD_FILES]
    assert sorted(recorded) == sorted(p.name for p in small_items.glob("part-*.parquet"))
    for name, digest in recorded.items():
        assert hashlib.sha256((small_items / name).read_bytes()).hexdigest() == digest


def _rewrite(path: Path, column: str, values: pa.Array) -> None:
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    write_parquet_atomic(path, table.set_column(index, table.schema.field(index).name, values))


def _answers_flipped(path: Path) -> pa.Array:
    answers = pq.read_table(path, columns=["answer"])["answer"]
    return pc.if_else(
        pc.equal(answers, '{"answer": "yes"}'), '{"answer": "no"}', '{"answer": "yes"}'
    )


def test_a_rewritten_answer_is_refused(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = items / f"part-{TASK}.parquet"
    _rewrite(shard, "answer", _answers_flipped(shard))
    line = _evaluate(items, tmp_path / "results", capsys)
    assert str(shard) in line and "differs" in line, line


def test_a_rewritten_answer_is_refused_by_the_content_hash_of_an_older_manifest(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = json.loads((items / MANIFEST).read_text())
    del manifest[SHARD_FILES]  # as `generate` wrote manifests before it recorded file hashes
    (items / MANIFEST).write_text(json.dumps(manifest))
    shard = items / f"part-{TASK}.parquet"
    _rewrite(shard, "answer", _answers_flipped(shard))
    line = _evaluate(items, tmp_path / "results", capsys)
    assert str(shard) in line and "differs" in line, line


def test_a_missing_shard_is_refused(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (items / f"part-{TASK}.parquet").unlink()
    line = _evaluate(items, tmp_path / "results", capsys)
    assert f"part-{TASK}.parquet" in line and "missing" in line, line


def test_a_wrongly_typed_column_is_refused(
    items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = items / f"part-{TASK}.parquet"
    seeds = pq.read_table(shard, columns=["seed"])["seed"]
    _rewrite(shard, "seed", pc.cast(seeds, pa.string()))
    line = _evaluate(items, tmp_path / "results", capsys)
    assert str(shard) in line and "seed: string" in line, line
