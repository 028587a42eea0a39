"""`generate`: the item table, its manifest, determinism, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from geometry.item import ITEM_SCHEMA
from pipelines.noregeo.generate import generate
from tests.conftest import REPO

TASKS = ["C-BCT-CT", "N-ECL-IT", "U-RLT-SLT"]


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_item_table_and_manifest(small_items: Path) -> None:
    manifest = _manifest(small_items)
    assert manifest["rows"] == 25 * 20 * 3
    table = pq.read_table(sorted(small_items.glob("part-*.parquet")))
    assert table.schema.names == ITEM_SCHEMA.names
    assert table.num_rows == manifest["rows"]
    rows = table.to_pylist()
    for row in rows:
        assert (row["image"] is None) == (row["setup"] == "text")
    assert manifest["counts"]["C-BCT-CT"] == {"text": 20, "dotted": 20, "full": 20}
    assert manifest["labels"]["C-BCT-CT"] == {"yes": 10, "no": 10}


def test_same_seed_same_hash_other_seed_other_hash(ray_local, tmp_path: Path) -> None:
    runs = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        generate(
            tmp_path / name, TASKS, per_task=6, seed=seed, setups=["text", "full"], image_size=96
        )
        runs[name] = _manifest(tmp_path / name)
    assert runs["a"]["content_sha256"] == runs["b"]["content_sha256"]
    for task in TASKS:
        shard = f"part-{task}.parquet"
        assert (tmp_path / "a" / shard).read_bytes() == (tmp_path / "b" / shard).read_bytes()
    assert runs["a"]["content_sha256"] != runs["c"]["content_sha256"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipelines", "generate", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "C-BCT-CT,BOGUS"], "unknown task IDs BOGUS; valid: C-ACM-PST"),
        (["--per-task", "0"], "argument --per-task: must be an integer from 1 to 10000, got 0"),
        (["--setups", "text,sketch"], "unknown setups sketch; valid: text, dotted, full"),
    ],
)
def test_bad_input_exits_2_naming_the_value(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "items"
    result = _cli("--out", str(out), *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_output_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("keep me")
    result = _cli("--out", str(target), "--per-task", "2")
    assert result.returncode == 2 and "is a file" in result.stderr
    assert target.read_text() == "keep me"
