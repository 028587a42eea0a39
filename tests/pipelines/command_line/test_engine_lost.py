"""The lost-engine line: `EngineLostError`, raised in a Ray Data actor and wrapped by Ray on
its way to the driver, is printed as its one line with the command that resumes, exit 1
(pipelines/command_line/engine_lost.py; the cluster case: tests/pipelines/
test_lost_engine_node.py)."""

from __future__ import annotations

import pytest

import pipelines.cli as cli
from pipelines.command_line.engine_lost import engine_lost
from pipelines.engines.stages.resident_hosts import EngineLostError

LINE = (
    "the engine node 127.0.0.2 of tiny-llm was lost and no node of the cluster can host the "
    "engine (1 GPU) after 10 s (GEOSEE_GPU_WAIT_S sets the wait)"
)


def _as_ray_delivers_it() -> BaseException:
    """The forwarder's error as the driver gets it (seen in the cluster test): Ray's task
    error around Ray Data's UserCodeException, whose own cause did not travel; the worker's
    exception only in the remote traceback's text."""
    from ray.data.exceptions import UserCodeException
    from ray.exceptions import RayTaskError

    remote = (
        'Traceback (most recent call last):\n  File "resident_hosts.py", line 118, in check\n'
        f"pipelines.engines.stages.resident_hosts.EngineLostError: {LINE}\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "ray.exceptions.UserCodeException: UDF failed to process a data block."
    )
    user = UserCodeException("UDF failed to process a data block.")
    return RayTaskError(
        "MapWorker(MapBatches(ForwardBatches)).submit", remote, user
    ).as_instanceof_cause()


def test_the_worker_error_is_found_under_ray_wrappers() -> None:
    assert engine_lost(_as_ray_delivers_it()) == LINE
    assert engine_lost(EngineLostError(LINE)) == LINE  # raised in this process
    assert engine_lost(RuntimeError("something else")) is None


def test_the_command_prints_one_line_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pipelines.geobuild.loop as loop

    def lost(args: object) -> int:
        raise _as_ray_delivers_it()

    monkeypatch.setattr(loop, "run", lost)
    argv = ["geobuild", "--dataset", "d", "--model", "m", "--out", "o"]
    monkeypatch.setattr("sys.argv", ["geosee", *argv])
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {LINE}; resume with: geosee {' '.join(argv)}"]
