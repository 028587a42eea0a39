"""Quiet, fast commands: a finished run started again starts no Ray; Ray's start-up and
progress-UI notices are held down unless --verbose; --log-level sets our loggers."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pipelines.engines.session.ray_session as ray_session
from pipelines.cli import main
from pipelines.terminal import logs
from tests.conftest import REPO, SHARED

TASKS = "C-ACM-PST,N-BCT-MT"
# Lines Ray 2.60 prints on a plain run with stderr on a pipe (the two notices a terminal
# gets instead are checked at their loggers below).
PIPE_NOISE = (
    "Token authentication is enabled",
    "Progress will be logged because stdout is a non-interactive terminal",
)
# Ray Data's progress block and the C++ core's log prefixes (glog: `E1201 12:00:00 ...
# core_worker.cc`); none reaches a non-terminal without --verbose.
RAY_LINES = ("Running Dataset", "logging_progress.py", "Total Progress", "core_worker.cc")
# Runs the CLI with ray.init made to fail: any Ray start, ours or Ray Data's automatic
# one, ends the command with a traceback.
NO_RAY = """
import sys
import ray
import ray._private.worker

def refuse(*args, **kwargs):
    raise RuntimeError("ray.init was called")

ray.init = ray._private.worker.init = refuse
from pipelines.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _cli(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    head = ["-c", code] if code is not None else ["-m", "pipelines"]
    return subprocess.run(
        [sys.executable, *head, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=400,
    )


@pytest.fixture(autouse=True)
def default_logging() -> Iterator[None]:
    """Each test starts, and leaves the process, with the CLI's default logging."""
    logs.configure()
    yield
    logs.configure()


@pytest.fixture(scope="module")
def items(ray_local: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 tasks x 2 items, text setup only: 4 request rows."""
    from pipelines.noregeo.generate import generate

    out = tmp_path_factory.mktemp("quiet_items")
    generate(out, TASKS.split(","), per_task=2, seed=0, setups=["text"], image_size=64)
    return out


def test_a_run_prints_no_ray_notices_and_its_rerun_starts_no_ray(
    items: Path, tmp_path: Path
) -> None:
    args = ["evaluate", "--items", str(items), "--engine", "oracle", "--model", "oracle"]
    args += ["--out", str(tmp_path / "results")]
    first = _cli(*args)  # its own Ray: a fresh start is where the notices come from
    assert first.returncode == 0, first.stderr
    assert "4 new rows" in first.stdout
    for noise in PIPE_NOISE:
        assert noise not in first.stderr, first.stderr
    # Not a terminal: plain progress lines, no bar frames, no Ray progress blocks or C++ logs.
    assert "\r" not in first.stderr + first.stdout
    counts = [line.split(", ")[0] for line in first.stderr.splitlines()]  # rate apart
    assert "evaluate oracle: 0/4 rows (0%)" in counts
    assert "evaluate oracle: 4/4 rows (100%)" in counts
    for ray_line in RAY_LINES:
        assert ray_line not in first.stderr + first.stdout, first.stderr
    again = _cli(*args, code=NO_RAY)
    assert again.returncode == 0, again.stderr
    assert "nothing to do: 0 new rows; 4 rows already in" in again.stdout
    assert "engine errors 0 (0.0%)" in again.stdout  # the health line, as after a run
    # The first run's accuracy line again (a reader of a rerun's log looks for it), nothing
    # else: no tables, no "wrote results.json" for a run that wrote nothing.
    accuracy = [x for x in first.stdout.splitlines() if x.startswith("accuracy % ")]
    assert len(accuracy) == 1 and accuracy[0] in again.stdout.splitlines(), again.stdout
    assert len(again.stdout.strip().splitlines()) == 3, again.stdout
    # Not vacuous: the same command with rows to write does reach ray.init.
    fresh = _cli(*args[:-1], str(tmp_path / "other"), code=NO_RAY)
    assert fresh.returncode != 0 and "ray.init was called" in fresh.stderr


def test_a_finished_geobuild_run_started_again_starts_no_ray(
    ray_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    data = SHARED / "geobuildbench"
    if not data.is_dir():
        pytest.skip(f"GeoBuild data not at {data}")
    script = tmp_path / "scripted.jsonl"
    script.write_text('{"id": "380", "round": 1, "text": "point : 0 0 -> O"}\n')
    argv = ["geobuild", "--dataset", str(data), "--engine", "programs", "--model", str(script)]
    argv += ["--ids", "380", "--max-rounds", "1", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    capsys.readouterr()

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("ensure_ray was called")

    monkeypatch.setattr(ray_session, "ensure_ray", refuse)
    assert main(argv) == 0
    assert "nothing to do: 1 problem(s) already in" in capsys.readouterr().out


def _emitted(logger_name: str, emit: Any) -> list[logging.LogRecord]:
    """The records `emit()` passes through the named logger's level."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logging.getLogger(logger_name).addHandler(handler)
    try:
        emit()
    finally:
        logging.getLogger(logger_name).removeHandler(handler)
    return records


@pytest.mark.parametrize("verbose", [False, True])
def test_ray_notices_are_held_down_unless_verbose(verbose: bool) -> None:
    from ray._private.authentication import authentication_token_setup
    from ray.data._internal.progress import utils
    from ray.util.debug import reset_log_once

    logs.configure(verbose=verbose)

    def truncated() -> None:
        reset_log_once("ray_data_truncate_operator_name")
        utils.truncate_operator_name("->".join(["MapBatches(step)"] * 20), 100)

    def bars_disabled() -> None:  # what every dataset of a quiet run says once per process
        import ray.data
        from ray.data._internal import progress

        reset_log_once("ray_data_progress_manager_disabled")
        ctx = ray.data.DataContext()
        ctx.enable_progress_bars = False
        progress.get_progress_manager(ctx, "dataset_0", {}, False)

    notices = [
        _emitted(
            authentication_token_setup.__name__, authentication_token_setup._warn_token_auth_enabled
        ),
        _emitted(utils.__name__, truncated),
        _emitted("ray.data._internal.progress", bars_disabled),
    ]
    assert [len(n) for n in notices] == ([1, 1, 1] if verbose else [0, 0, 0])
    # "Dataset ... execution finished in 2.20 seconds": INFO, once per dataset.
    executor = logging.getLogger("ray.data._internal.execution.streaming_executor")
    assert executor.isEnabledFor(logging.INFO) == verbose
    # The progress UI and non-interactive notices are INFO on the progress package logger,
    # and so is the logging progress display under it (the commands print their own).
    progress = logging.getLogger("ray.data._internal.progress")
    assert progress.isEnabledFor(logging.INFO) == verbose
    assert logging.getLogger(logs.RAY_PROGRESS_LOGGER).isEnabledFor(logging.INFO) == verbose
    assert logs.ray_logging_level() == (logging.INFO if verbose else logging.WARNING)


def test_ray_starts_at_its_info_level_with_verbose(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    started: list[dict[str, Any]] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: started.append(kwargs))
    ctx = ray.data.DataContext.get_current()  # ensure_ray sets these: restored after
    monkeypatch.setattr(ctx, "enable_progress_bars", ctx.enable_progress_bars)
    monkeypatch.setattr(ctx, "print_on_execution_start", ctx.print_on_execution_start)
    for argv in (["list-tasks"], ["list-tasks", "--verbose"]):
        assert main(argv) == 0
        ray_session.ensure_ray()
    assert [s["logging_level"] for s in started] == [logging.WARNING, logging.INFO]
    # Workers' output (library bars, notices) reaches the driver only with --verbose.
    assert [s["log_to_driver"] for s in started] == [False, True]


@pytest.mark.parametrize(
    ("level", "shown"),
    [("DEBUG", ["debug", "info", "warning"]), ("INFO", ["info", "warning"]), ("ERROR", [])],
)
def test_log_level_sets_what_our_loggers_show(
    level: str, shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list-tasks", "--log-level", level]) == 0
    capsys.readouterr()
    log = logging.getLogger("pipelines.some_module")
    log.debug("debug line")
    log.info("info line")
    log.warning("warning line")
    err = capsys.readouterr().err
    assert [w for w in ("debug", "info", "warning") if f"{w} line" in err] == shown
    if "warning" in shown:
        assert "warning: warning line" in err.splitlines()


def test_other_libraries_info_only_with_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    for verbose in (False, True):
        assert main(["list-tasks", *(["--verbose"] if verbose else [])]) == 0
        capsys.readouterr()
        logging.getLogger("httpx").info("HTTP Request: POST")
        assert ("HTTP Request" in capsys.readouterr().err) == verbose


def test_a_bad_log_level_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list-tasks", "--log-level", "LOUD"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--log-level" in err
