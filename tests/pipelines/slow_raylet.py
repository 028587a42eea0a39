"""A local Ray start whose raylet misses Ray's own 30 s wait, then one that does not; run as
`python -m tests.pipelines.slow_raylet`, it prints one JSON line for
test_ray_start_retry.py.

The first start runs Ray 2.60's real code (ray/_private/node.py: the GCS and raylet start,
then `services.get_node` is polled until `raylet_start_wait_time_s = 30` runs out) with two
changes to that module only: `get_node` answers "not registered" as an overloaded GCS does,
and the module's clock moves 31 s per reading, so Ray raises its own startup-timeout
Exception at once, leaving the processes it started.
"""

from __future__ import annotations

import json
import os
import time
import types
from pathlib import Path
from typing import Any

import ray
import ray._private.node as ray_node

from pipelines.engines.session.ray_reaper import descendants, start_time
from pipelines.engines.session.ray_session import start_local


def _names(pids: list[int]) -> dict[int, str]:
    found = {}
    for pid in pids:
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
    return found


def main() -> None:
    real_get_node = ray_node.ray._private.services.get_node
    real_time = ray_node.time
    calls = {"init": 0}
    first_start: dict[int, int | None] = {}
    first_names: dict[int, str] = {}

    def not_registered(*_: object) -> object:
        raise RuntimeError("node info not yet in the GCS")

    clock = {"now": time.monotonic()}

    def jumping_clock() -> float:
        clock["now"] += 31.0
        return clock["now"]

    def init(**options: Any) -> None:
        calls["init"] += 1
        if calls["init"] == 1:
            ray_node.ray._private.services.get_node = not_registered
            ray_node.time = types.SimpleNamespace(  # type: ignore[assignment]
                sleep=time.sleep, monotonic=jumping_clock
            )
            try:
                ray.init(**options)
            finally:
                first_start.update({p: start_time(p) for p in descendants(os.getpid())})
                first_names.update(_names(list(first_start)))
                ray_node.ray._private.services.get_node = real_get_node
                ray_node.time = real_time
            return
        ray.init(**options)

    start_local(init, num_cpus=1, include_dashboard=False, log_to_driver=False)
    answer = ray.get(ray.remote(lambda: 41 + 1).remote())
    left_over = [pid for pid, t in first_start.items() if t is not None and start_time(pid) == t]
    print(
        json.dumps(
            {
                "inits": calls["init"],
                "answer": answer,
                "first_start": sorted(first_names.values()),
                "first_start_alive": sorted(_names(left_over).values()),
                "raylets_now": sum(
                    "raylet" in name for name in _names(descendants(os.getpid())).values()
                ),
            }
        )
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
