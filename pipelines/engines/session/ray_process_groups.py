"""Local Ray's processes each in a process group of its own, so that a signal sent to the
command's group reaches the command alone.

Ray 2.60 starts the GCS, the raylet and its other processes with `ConsolePopen`
(ray/_private/services.py, `start_ray_process`), in the driver's process group, with
SIGINT blocked but SIGTERM not. A SIGTERM to the group (`timeout`, `kill -- -PGID`, a
batch system ending a job) then ends the raylet with the command; the driver's core worker
learns from the GCS that its node is gone and ends the process itself, exit 1 and nothing
said ("The connection to the plasma store is failed. Terminate the process",
connection.cc), 40 ms after the raylet's SIGTERM: before the command had written the rows
it held or printed its line (tests/pipelines/noregeo/test_held_rows.py, 1 group SIGTERM in 12 at
load 3; 4 in 30 when the line was written without waiting for the main thread).

Ray's own Windows code starts its processes in new groups the same way where the kernel
ends them with their parent (the same `ConsolePopen`); on Linux each is started with
PR_SET_PDEATHSIG, which still ends it with the driver, and the agents that escape that are
ended by pipelines.engines.session.ray_reaper. Standard input becomes /dev/null: a process outside
the terminal's foreground group that read it would be stopped (SIGTTIN).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def own_process_groups() -> Iterator[None]:
    """While the block runs (`ray.init` starting local Ray), each process Ray starts is the
    leader of a process group of its own."""
    from ray._private import services

    console_popen = services.ConsolePopen

    class OwnGroupPopen(console_popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["process_group"] = 0
            if kwargs.get("stdin") is None:
                kwargs["stdin"] = subprocess.DEVNULL
            super().__init__(*args, **kwargs)

    setattr(services, "ConsolePopen", OwnGroupPopen)  # noqa: B010 (mypy: a class)
    try:
        yield
    finally:
        setattr(services, "ConsolePopen", console_popen)  # noqa: B010
