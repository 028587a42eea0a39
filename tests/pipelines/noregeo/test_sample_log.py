"""`evaluate --log-samples DIR`: one JSON line per result row, one file per setup, each line
recomputable from the row it copies; an unwritable folder is refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.noregeo.summarize import load_results


def test_every_row_is_one_line_with_its_verdict(small_items: Path, tmp_path: Path) -> None:
    out, logs = tmp_path / "out", tmp_path / "samples"
    argv = ["evaluate", "--items", str(small_items), "--engine", "random", "--model", "random"]
    argv += ["--per-task", "1", "--log-samples", str(logs), "--out", str(out)]
    assert main(argv) == 0
    rows = {r["request_key"]: r for r in load_results(out, model="random").iter_rows(named=True)}
    files = sorted((logs / "random").glob("*.jsonl"))
    assert [f.stem for f in files] == sorted({r["setup"] for r in rows.values()})
    lines = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert sorted(line["request_key"] for line in lines) == sorted(rows)
    for line in lines:
        row = rows[line["request_key"]]
        for column in ("prompt", "generated_text", "parsed", "answer", "correct", "setup"):
            assert line[column] == row[column]
        want = "invalid" if not row["valid"] else ("correct" if row["correct"] else "wrong")
        assert line["verdict"] == want


def test_a_file_or_unwritable_place_is_refused_before_any_work(
    small_items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    argv = ["evaluate", "--items", str(small_items), "--engine", "random", "--model", "random"]
    for bad, says in [
        (a_file, "is a file; give a directory"),
        (a_file / "below", "is not writable"),  # a path through a file: mkdir fails
    ]:
        out = tmp_path / "out"
        assert main([*argv, "--log-samples", str(bad), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"--log-samples {bad}" in err and says in err, err
        assert len(err.strip().splitlines()) == 1 and not out.exists()
