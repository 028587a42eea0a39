"""`probe` and `probe-summarize` commands: the smoke grid on Ray, resume after SIGKILL,
fast failure without hub access."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

import pipelines.cli as cli
from probes.grid import expand, load_grid, result_files
from probes.tables import summarize
from tests.conftest import REPO

SMOKE = REPO / "configs" / "probes" / "smoke.yaml"
# Registers the commands in a child process until the lead adds them to COMMANDS.
CHILD = textwrap.dedent(
    """
    import sys, pipelines.cli as c
    c.COMMANDS["probe"] = ("pipelines.probes.grid", "probe grid")
    raise SystemExit(c.main(sys.argv[1:]))
    """
)


@pytest.fixture(autouse=True)
def _commands(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "probe", ("pipelines.probes.grid", "probe grid"))
    monkeypatch.setitem(cli.COMMANDS, "probe-summarize", ("pipelines.probes.summarize", "tables"))


def _tiny_grid(tmp_path: Path, **changes: object) -> Path:
    spec = yaml.safe_load(SMOKE.read_text())
    spec["data"] = {"train": 32, "val": 16, "test": 16, "seed": 0, "image_size": 224}
    spec["train"]["epochs"] = 1
    spec.update(changes)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_smoke_grid_runs_on_ray_and_summarizes(ray_local, tmp_path, capsys) -> None:
    """The smoke grid's 10 trials and tables, on a few figures at its own image size (what
    the tower learns on the full data: tests/probes/test_smoke_learns.py)."""
    out = tmp_path / "results"
    smoke = yaml.safe_load(SMOKE.read_text())
    grid = _tiny_grid(tmp_path, data={**smoke["data"], "train": 64, "val": 16, "test": 32})
    assert cli.main(["probe", "--grid", str(grid), "--out", str(out)]) == 0
    trials = expand(load_grid(grid))
    assert len(result_files(out)) == len(trials) == 10
    tables = summarize(out, min_accuracy=0.0)
    (parts,) = tables.values()
    t4 = parts["table4"]
    assert t4.select("Train DS", "Config").rows() == [
        ("All", "UF"),
        ("All", "FD"),
        ("Separate", "UF"),
        ("Separate", "FD"),
        ("Shuffled labels", "UF"),
        ("Shuffled labels", "FD"),
    ]
    assert t4.columns[2:] == ["AllF", "AllD", "C-SYM-SSTF", "C-SYM-SSTD", "U-SYM-STF", "U-SYM-STD"]
    # That the scratch tower learns U-SYM-ST is asserted in tests/probes/test_smoke_learns.py;
    # here only what every cell must be, an accuracy over the whole balanced test set.
    values = t4.drop("Train DS", "Config").to_numpy()
    assert ((values >= 0) & (values <= 100)).all()
    transfer = parts["transfer"]
    assert transfer.height == 2 * 2 * 2 * 2  # train task x eval task x config x setup
    assert cli.main(["probe-summarize", str(out)]) == 0
    assert "Table 4" in capsys.readouterr().out
    # A second run finds every trial done.
    mtimes = {p: p.stat().st_mtime_ns for p in result_files(out)}
    assert cli.main(["probe", "--grid", str(grid), "--out", str(out)]) == 0
    assert {p: p.stat().st_mtime_ns for p in result_files(out)} == mtimes


@pytest.mark.slow
def test_killed_grid_resumes_without_redoing_trials(tmp_path) -> None:
    grid, out = _tiny_grid(tmp_path), tmp_path / "results"
    total = len(expand(load_grid(grid)))
    cmd = [
        sys.executable,
        "-c",
        CHILD,
        "probe",
        "--grid",
        str(grid),
        "--out",
        str(out),
        "--executor",
        "local",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600
        while len(result_files(out)) < 2 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the session this test created, nothing else
        child.wait()
    first = {p: p.stat().st_mtime_ns for p in result_files(out)}
    assert 2 <= len(first) < total
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True, timeout=900)
    after = {p: p.stat().st_mtime_ns for p in result_files(out)}
    assert len(after) == total
    assert all(after[p] == m for p, m in first.items())
    rows = pl.concat([pl.read_parquet(p) for p in after])
    assert rows["trial_id"].n_unique() == total


def test_openai_tag_without_hub_fails_at_once(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("probes.encoder._cached_weights", lambda cfg, cache_dir: None)
    # "At once", without timing it: no connection tried, no download, no Ray started.
    slow: list[str] = []
    for target in (
        "socket.create_connection",
        "open_clip.download_pretrained",
        "pipelines.engines.session.ray_session.ensure_ray",
    ):
        monkeypatch.setattr(target, lambda *a, _name=target, **k: slow.append(_name))
    code = cli.main(
        [
            "probe",
            "--grid",
            str(SMOKE),
            "--out",
            str(tmp_path),
            "--arch",
            "ViT-B-32",
            "--pretrained",
            "openai",
        ]
    )
    assert code == 2 and slow == []
    assert "cannot be reached" in capsys.readouterr().err
    assert not (tmp_path / "probes").exists()


def test_bad_grid_is_a_usage_error(tmp_path, capsys) -> None:
    bad = _tiny_grid(tmp_path, tasks=["N-ECL-PPT"])
    assert cli.main(["probe", "--grid", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "unknown probe tasks" in capsys.readouterr().err


def test_a_deeply_nested_grid_is_one_line(tmp_path, capsys) -> None:
    """Issue 38: the probe grid was read by PyYAML unbounded (a RecursionError traceback)."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 5000 + "]" * 5000)
    assert cli.main(["probe", "--grid", str(deep), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "levels" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
