"""scripts/demo_diff.py, which compares two `make demo` outputs (issue 48: the report,
summaries and samples before and after a change are the same): what it masks and that it
still sees a real change."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("demo_diff", REPO / "scripts" / "demo_diff.py")
assert spec is not None and spec.loader is not None
demo_diff = importlib.util.module_from_spec(spec)
spec.loader.exec_module(demo_diff)


def _demo(root: Path, commit: str, stamp: str, seconds: str, table_cell: str) -> Path:
    """A demo folder in miniature: a run record, a results.json, a shard, two report
    tables and a page, each holding the fields a rerun changes."""
    model = root / "results" / "noregeo" / "model=m"
    (model / "runs").mkdir(parents=True)
    (model / "runs" / f"{stamp}-123-0a1b2c3d.json").write_text(
        json.dumps({"git_commit": commit, "started_utc": stamp, "items": str(root / "items")})
    )
    summary = {"provenance": {"git_commit": commit, "written_utc": "2026-12-07T04:32:10Z"}}
    (model / "results.json").write_text(json.dumps({**summary, "accuracy": 28.0}))
    rows = [{"request_key": k, "correct": k == "a", "time_taken_llm": float(len(seconds))}
            for k in ("b", "a")]  # fmt: skip
    shard = pa.Table.from_pylist(rows if seconds == "0.07" else rows[::-1])
    pq.write_table(shard, model / f"part-{commit[:24]}.parquet")
    tables = root / "report" / "tables"
    tables.mkdir(parents=True)
    (tables / "audit_status.csv").write_text(
        f"status,problems,median_seconds,share\nsolved,3,{seconds},100.0\n"
    )
    (tables / "key_results.csv").write_text(f"model,text\nm,{table_cell}\n")
    (root / "report" / "index.html").write_text(
        f"<p>report built {stamp[:4]}-12-07 04:35 UTC from {root}</p>"
        f'<td class="txt">solved</td><td class="num">3</td><td class="num">{seconds}</td>'
        f"<td>{commit[:12]}</td><td>audit-{commit[:16]}</td><td>{table_cell}</td>"
    )
    return root


def test_two_runs_differing_in_volatile_fields_only_are_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _demo(tmp_path / "a", "1" * 40, "20261207T043203Z", "0.07", "28.0")
    _demo(tmp_path / "b", "2" * 40, "20261207T044101Z", "0.02", "28.0")
    assert _compare(tmp_path / "a", tmp_path / "b") == 0, capsys.readouterr().out


def test_a_changed_table_cell_is_reported_with_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _demo(tmp_path / "a", "1" * 40, "20261207T043203Z", "0.07", "28.0")
    _demo(tmp_path / "b", "2" * 40, "20261207T044101Z", "0.02", "28.4")
    assert _compare(tmp_path / "a", tmp_path / "b") == 1
    out = capsys.readouterr().out
    assert "report/tables/key_results.csv: at " in out and "report/index.html: at " in out, out
    assert "audit_status" not in out and "results.json" not in out, out


def _compare(before: Path, after: Path) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.argv", ["demo_diff.py", str(before), str(after)])
        return int(demo_diff.main())
