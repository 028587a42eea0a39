"""A restartable engine host lost with its node, watched by a forwarder that never had an
answer from it (tests/pipelines/engines/stages/test_resident_hosts.py runs this in a process
of its own: the test session may hold a Ray of its own already).

On a local two-node cluster (`ray.cluster_utils.Cluster`, under the caller's RAY_TMPDIR): a
host on the worker node, a watch made while it is up, the worker node removed with no other
node able to hold the host; prints JSON: where the host ran, where it recorded it started,
its state after the loss, and the watch's line.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pipelines.engines.stages.resident_hosts import (
    EngineLostError,
    HostWatch,
    RestartableHost,
    restartable,
    started_on,
)

DEMAND = {"engine_slot": 1.0}  # a resource only the worker node has (a GPU, in a real run)


class Host(RestartableHost):
    def where(self) -> str:
        import ray

        return str(ray.util.get_node_ip_address())


def _state(host: Any) -> str:
    import ray._private.state as ray_state

    return str(ray_state.actors(actor_id=host._actor_id.hex()).get("State", ""))


def main() -> None:
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        worker = cluster.add_node(num_cpus=1, resources=dict(DEMAND))
        ray.init(address=cluster.address)
        options = restartable({"num_cpus": 0, "resources": dict(DEMAND)})
        host = ray.remote(Host).options(**options).remote()
        where = ray.get(host.where.remote())  # up, on the worker node
        recorded = started_on(host)
        watch = HostWatch(host, "tiny-llm", DEMAND, wait_s=0.0)  # never told of an answer
        cluster.remove_node(worker)
        deadline = time.monotonic() + 60
        while _state(host) == "ALIVE" and time.monotonic() < deadline:
            time.sleep(0.2)
        state = _state(host)
        try:
            watch.check()
            line = None
        except EngineLostError as lost:
            line = str(lost)
        print(json.dumps({"where": where, "recorded": recorded, "state": state, "line": line}))
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
