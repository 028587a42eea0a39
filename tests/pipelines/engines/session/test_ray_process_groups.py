"""Local Ray's processes start in process groups of their own (issue 38's group SIGTERM:
pipelines.engines.session.ray_process_groups). The contract with Ray 2.60 checked here: every
process `ray.init` starts goes through `services.start_ray_process`, which looks up
`ConsolePopen` in its module when it runs; by default the process shares our group. The
whole path, a group SIGTERM to a running command, is tests/pipelines/noregeo/test_held_rows.py."""

from __future__ import annotations

import os

from ray._private import services

from pipelines.engines.session.ray_process_groups import own_process_groups


def _started() -> services.ProcessInfo:
    return services.start_ray_process(["sleep", "60"], "test_process", fate_share=False)


def test_ray_processes_lead_their_own_group_and_read_nothing_from_the_terminal() -> None:
    started = []
    try:
        started.append(default := _started())
        with own_process_groups():
            started.append(own := _started())
        assert os.getpgid(default.process.pid) == os.getpgrp()  # Ray's own way
        assert os.getpgid(own.process.pid) == own.process.pid
        assert os.readlink(f"/proc/{own.process.pid}/fd/0") == os.devnull
        assert services.ConsolePopen.__name__ == "ConsolePopen"  # put back after the block
    finally:
        for info in started:
            info.process.kill()
            info.process.wait()
