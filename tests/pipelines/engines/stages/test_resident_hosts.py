"""A forwarder that never had an answer from its engine host still names the node the host
was lost on (pipelines/engines/stages/resident_hosts.py).

Ray's GCS clears a restarting actor's address and keeps no death context until the actor is
dead for good (seen in tests/pipelines/test_lost_engine_node.py: "the engine node (its
address unknown)" when the forwarder that saw the loss had no answer yet). Here on a local
two-node cluster (`ray.cluster_utils.Cluster`): a restartable host on the worker node, a
watch made while it is up that never hears from it, the worker node removed with no other
node able to hold the host: the watch's line names the node's address.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pipelines.engines.stages.resident_hosts import (
    EngineLostError,
    HostWatch,
    RestartableHost,
    restartable,
    started_on,
)
from tests.ray_tmpdir import own_ray_tmpdir

DEMAND = {"engine_slot": 1.0}  # a resource only the worker node has (a GPU, in a real run)


class Host(RestartableHost):
    def where(self) -> str:
        import ray

        return str(ray.util.get_node_ip_address())


@pytest.fixture
def two_nodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    import ray
    from ray.cluster_utils import Cluster

    # The Cluster records its address for every ray.init() of the machine: not in the
    # machine's default folder (tests/ray_tmpdir.py).
    with own_ray_tmpdir(monkeypatch):
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "include_dashboard": False},
        )
        worker = cluster.add_node(num_cpus=1, resources=dict(DEMAND))
        ray.init(address=cluster.address)
        try:
            yield cluster, worker
        finally:
            ray.shutdown()
            cluster.shutdown()


def _state(host: Any) -> str:
    import ray._private.state as ray_state

    return str(ray_state.actors(actor_id=host._actor_id.hex()).get("State", ""))


def test_a_watch_without_an_answer_names_the_lost_node(two_nodes: tuple[Any, Any]) -> None:
    import ray

    cluster, worker = two_nodes
    options = restartable({"num_cpus": 0, "resources": dict(DEMAND)})
    host = ray.remote(Host).options(**options).remote()
    where = ray.get(host.where.remote())  # up, on the worker node
    assert started_on(host) == where
    watch = HostWatch(host, "tiny-llm", DEMAND, wait_s=0.0)  # never told of an answer

    cluster.remove_node(worker)
    deadline = time.monotonic() + 60
    while _state(host) == "ALIVE" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _state(host) in ("RESTARTING", "PENDING_CREATION")

    with pytest.raises(EngineLostError) as lost:
        watch.check()
    assert str(lost.value).startswith(f"the engine node {where} of tiny-llm was lost")
