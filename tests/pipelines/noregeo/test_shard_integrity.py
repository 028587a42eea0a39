"""Result shards are verified, not trusted because they decode (issue 26, item 5): page
checksums written and checked, each shard's column types checked against the result schema,
null request keys refused; what fails is quarantined and the readers go on."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.cli import main
from pipelines.noregeo.results import RESULT_SCHEMA, ShardWriter
from pipelines.noregeo.summarize import load_results
from store.atomic import write_parquet_atomic
from store.records import finished_keys, model_dir
from store.shards import QUARANTINE, read_shards, shard_files
from tests.pipelines.noregeo.result_rows import scored_rows


@pytest.fixture
def results(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(out, model dir, the one shard): 40 rows in setup=text, written by the writer."""
    out = tmp_path / "results"
    root = model_dir(out, "noregeo", "m")
    ShardWriter(str(root), "m", "rev", "oracle")(pa.Table.from_pylist(scored_rows("text", 0, 40)))
    (shard,) = shard_files(root)
    return out, root, Path(str(shard))


def _flip_that_still_decodes(shard: Path) -> bytes:
    """The shard with one byte of its request_key page flipped such that it still decodes,
    without checksums, to other keys: found by trying each byte of the page in turn."""
    data = shard.read_bytes()
    meta = pq.ParquetFile(shard).metadata.row_group(0)
    column = next(
        meta.column(i)
        for i in range(meta.num_columns)
        if meta.column(i).path_in_schema == "request_key"
    )
    start = column.data_page_offset
    original = pq.read_table(shard, columns=["request_key"])
    for position in range(start + column.total_compressed_size - 1, start, -1):
        flipped = bytearray(data)
        flipped[position] ^= 0x01
        try:
            table = pq.read_table(pa.BufferReader(bytes(flipped)), columns=["request_key"])
        except (pa.ArrowException, OSError):
            continue
        if not table.equals(original):
            return bytes(flipped)
    raise AssertionError("no single-bit flip of the page decodes: the test needs another shard")


def test_a_shard_is_written_with_page_checksums(results: tuple[Path, Path, Path]) -> None:
    _, _, shard = results
    data = shard.read_bytes()
    flipped = _flip_that_still_decodes(shard)
    shard.write_bytes(flipped)
    with pytest.raises(OSError, match="CRC"):
        pq.read_table(shard, page_checksum_verification=True)
    shard.write_bytes(data)
    assert pq.read_table(shard, page_checksum_verification=True).num_rows == 40


def test_a_flipped_byte_that_still_decodes_is_quarantined_not_read(
    results: tuple[Path, Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    out, root, shard = results
    shard.write_bytes(_flip_that_still_decodes(shard))
    with caplog.at_level(logging.WARNING, logger="store.shards"):
        assert finished_keys(root) == set()  # its keys are recomputed by the next run
    assert "CRC" in caplog.text or "checksum" in caplog.text.lower(), caplog.text
    assert not shard.exists()
    assert [p.name for p in (root / QUARANTINE).iterdir()] == [f"setup=text__{shard.name}"]


def _wrongly_typed_correct(root: Path) -> Path:
    """A valid Parquet shard whose `correct` column holds strings, beside a good one."""
    rows = scored_rows("full", 100, 4)
    schema = pa.schema(
        [pa.field("correct", pa.string()) if f.name == "correct" else f for f in RESULT_SCHEMA]
    )
    for row in rows:
        row.update(model="m", revision="rev", engine="oracle", sampling_params="{}")
        row["correct"] = "yes"
    path = root / "setup=full" / "part-wrongtype.parquet"
    write_parquet_atomic(path, pa.Table.from_pylist(rows, schema=schema))
    return path


def test_a_wrongly_typed_column_is_quarantined_by_summarize_and_report(
    results: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, root, _ = results
    bad = _wrongly_typed_correct(root)
    assert main(["summarize", str(out), "--all"]) == 0
    captured = capsys.readouterr()
    assert "correct: string" in captured.err and "quarantine" in captured.err, captured.err
    assert not bad.exists()
    assert load_results(out).height == 40  # the good shard's rows, and only those
    _wrongly_typed_correct(root)
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "index.html").is_file()
    assert len(list((root / QUARANTINE).iterdir())) == 2


def test_a_shard_with_a_null_request_key_is_quarantined(
    results: tuple[Path, Path, Path],
) -> None:
    out, root, _ = results
    rows = scored_rows("full", 200, 3)
    for row in rows:
        row.update(model="m", revision="rev", engine="oracle", sampling_params="{}")
    rows[1]["request_key"] = None
    path = root / "setup=full" / "part-nullkey.parquet"
    write_parquet_atomic(path, pa.Table.from_pylist(rows, schema=RESULT_SCHEMA))
    frame = read_shards(root)
    assert frame is not None and frame.height == 40 and frame["request_key"].null_count() == 0
    assert not path.exists() and (root / QUARANTINE / "setup=full__part-nullkey.parquet").exists()
    assert len(finished_keys(root)) == 40
