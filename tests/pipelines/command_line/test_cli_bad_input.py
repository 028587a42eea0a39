"""Every command x each class of bad input: exit 2, one line on stderr naming the flag (or
file), nothing written, Ray never started.

The table is the point: add a row for each new flag or input file. Rows run in-process
through `pipelines.cli.main` (fast, no Ray); a few run through `python -m pipelines` to
check the real exit code and undecodable argv bytes.

A row is: id, text the error line must contain (the flag, or the file), the argv. In the
argv, `E`, `G`, `S`, `W` stand for the required arguments of evaluate, geobuild,
geobuild-solve and sweep (`BASE`); `{...}` are files and folders made by `_inputs`: `{dir}`
an empty folder, `{file}` a small text file, `{out}` a path that must stay absent,
`{items}` an item folder with a malformed manifest.json, `{latin1}` a file that is not UTF-8,
and so on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines import cli
from tests.pipelines.command_line.bad_input_table import (
    HUB_ROWS,
    ROWS,
    SUBPROCESS_ROWS,
    _argv,
    _inputs,
    _python_m,
    _tree,
)
from tests.pipelines.fake_hub import FakeHub


@pytest.mark.parametrize(("names", "argv"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], names: str, argv: list[str]
) -> None:
    import ray

    ray_was_up = ray.is_initialized()
    inputs = _inputs(tmp_path)
    before = _tree(tmp_path)
    code = cli.main(_argv(argv, inputs))
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert code == 2, captured
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert names in lines[0], lines[0]
    assert _tree(tmp_path) == before, "a bad input wrote something"
    assert ray.is_initialized() == ray_was_up, "Ray started for a bad input"


def test_the_table_covers_every_command() -> None:
    covered = {r[2][0] for r in ROWS}
    assert set(cli.COMMANDS) <= covered, set(cli.COMMANDS) - covered


@pytest.mark.parametrize(("names", "argv"), [r[1:] for r in HUB_ROWS], ids=[r[0] for r in HUB_ROWS])
def test_hub_id_bad_input_exits_2_with_one_line_and_writes_nothing(
    hub_for_row: FakeHub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    names: str,
    argv: list[str],
) -> None:
    test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, names, argv)
    assert not any("model.safetensors" in r for r in hub_for_row.requests)  # no weights asked


@pytest.mark.parametrize(
    ("names", "argv"), [r[1:] for r in SUBPROCESS_ROWS], ids=[r[0] for r in SUBPROCESS_ROWS]
)
def test_real_process_exits_2_with_one_line(tmp_path: Path, names: str, argv: list[str]) -> None:
    inputs = _inputs(tmp_path)
    before = _tree(tmp_path)
    result = _python_m(_argv(argv, inputs))
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and names in lines[0], result.stderr
    assert _tree(tmp_path) == before


def test_undecodable_argv_bytes_exit_2(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 on the real command line (not a Python string)."""
    result = _python_m(["summarize", str(tmp_path), "--benchmark", b"caf\xe9"])
    lines = result.stderr.decode("utf-8", "replace").splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and "--benchmark" in lines[0] and "UTF-8" in lines[0], lines
