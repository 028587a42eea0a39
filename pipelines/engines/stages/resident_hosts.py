"""Engine hosts that outlive a lost node: the long-lived actors that hold a GeoBuild run's
engine across its rounds (`vllm_resident`, `hf_resident`).

A plain actor dies with its node, and with it every round still to run (issue 51: a host
killed after 5 of 40 rows left 5, the dataset aborted with ActorDiedError). Here a host is
created with `max_restarts` and `max_task_retries`: when its node dies (a lost or reclaimed
GPU node; Ray counts no restart of a node drained for preemption), Ray starts it again on a
node that can hold it, its placement group (a tensor-parallel engine's) rescheduled with it
by the GCS, and the batches it was answering are sent again to the new host. No row is lost
and none is doubled: a batch's rows reach the round's writer only from the host's answer,
which the dead host never gave.

Where no node can hold the host any more (the only GPU node gone, no autoscaler adding one
in time), Ray would wait for ever. The forwarder that awaits an answer looks at the host
while it waits (`HostWatch`): restarting, with no live node large enough for it, it asks the
autoscaler and waits `gpu_wait_s()`, then raises `EngineLostError` naming the node that was
lost and the model; the command prints that one line and exits 1, and the rows the round
finished are on disk for the same command to resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from pipelines.engines.stages.gpus import GPU_WAIT_ENV, gpu_wait_s

# Restarts of one host in a run (a node lost, or the engine's process crashed); Ray does not
# count the restart of a node drained for preemption (a spot reclaim). Bounded, so an engine
# that crashes at every load ends the run instead of looping.
HOST_RESTARTS = 4

WATCH_POLL_S = 5.0  # how often a forwarder waiting for an answer looks at its host

# Actor states of a host that is not answering and not gone for good.
COMING_BACK = ("RESTARTING", "PENDING_CREATION", "DEPENDENCIES_UNREADY")


class EngineLostError(RuntimeError):
    """The node of an engine host was lost, and no node could hold the host again in time."""


def restartable(options: dict[str, Any]) -> dict[str, Any]:
    """A host's actor options with Ray's restarts: restarted on another node when its own is
    lost, the calls it was answering retried there."""
    return {**options, "max_restarts": HOST_RESTARTS, "max_task_retries": -1}


def node_ip() -> str:
    """This process's node address (a host tells the forwarder where it answered from)."""
    import ray

    return str(ray.util.get_node_ip_address())


# Where each host last started, in the GCS's key-value store: the GCS record of a restarting
# actor keeps neither its address nor (before it is dead for good) its death's context, and
# a forwarder that never had an answer from the host would otherwise not know the lost node.
HOST_NODES = "geometry-engine-host-nodes"


class RestartableHost:
    """Base of the host actors: each (re)start records the host's node (`started_on`)."""

    def __init__(self) -> None:
        import ray
        from ray.experimental.internal_kv import _internal_kv_put

        actor_id = ray.get_runtime_context().get_actor_id()
        if actor_id is not None:  # None: called as a plain object (unit tests of a host)
            _internal_kv_put(actor_id, node_ip(), namespace=HOST_NODES)


def started_on(host: Any) -> str | None:
    """The node `host` last started on, as it recorded it; None before its first start."""
    from ray.experimental.internal_kv import _internal_kv_get

    value = _internal_kv_get(host._actor_id.hex(), namespace=HOST_NODES)
    return value.decode() if value else None


def forget_hosts(hosts: list[Any]) -> None:
    """Drop the ended hosts' records (the driver's `close()`)."""
    from ray.experimental.internal_kv import _internal_kv_del

    for host in hosts:
        with contextlib.suppress(Exception):  # a record is a few bytes; the session ends it
            _internal_kv_del(host._actor_id.hex(), namespace=HOST_NODES)


def placeable(demand: dict[str, float]) -> bool:
    """Whether some live node of the cluster has, in all, the resources a host asks for
    (busy or not: a busy node frees them when its work ends)."""
    import ray

    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        total = node.get("Resources") or {}
        if all(float(total.get(name, 0.0)) >= need for name, need in demand.items() if need):
            return True
    return False


class HostWatch:
    """What a forwarder knows of one host: the node it last answered from, and since when it
    has been restarting with no node to hold it."""

    def __init__(self, host: Any, model: str, demand: dict[str, float], wait_s: float) -> None:
        self.host = host
        self.model = model
        self.demand = demand
        # The driver's `gpu_wait_s()`: read here, on a worker node, the variable would be
        # the node's, not the run's.
        self.wait_s = wait_s
        self.node: str | None = None  # where the host last answered from
        self.homeless_since: float | None = None
        self.request: Any = None  # the autoscaler request while it waits

    def answered(self, node: str) -> None:
        """The host answered from `node`: it is up."""
        self.node = node
        self._settled()

    def check(self) -> None:
        """Called while an answer is awaited: return while the host answers or can come
        back; EngineLostError once it has had no node to hold it for `wait_s`."""
        import ray._private.state as ray_state

        info = ray_state.actors(actor_id=self.host._actor_id.hex())
        state = str(info.get("State", ""))
        if state == "ALIVE":
            self.node = (info.get("Address") or {}).get("IPAddress") or self.node
            self._settled()
            return
        if state not in COMING_BACK:  # DEAD: out of restarts; the call itself raises
            return
        # Where it was when it was lost: its own record (it moves with each restart, which
        # this forwarder may not have seen), else where it last answered this forwarder.
        self.node = started_on(self.host) or self.node
        if placeable(self.demand):
            self._settled()  # loading on its new node, or queued behind other work
            return
        now = time.monotonic()
        if self.homeless_since is None:
            self.homeless_since = now
        self._ask_autoscaler()
        limit = self.wait_s
        if now - self.homeless_since >= limit:
            self._settled()
            wants = ", ".join(f"{v:g} {k}" for k, v in self.demand.items() if v)
            raise EngineLostError(
                f"the engine node {self.node or '(its address unknown)'} of {self.model} was "
                f"lost and no node of the cluster can host the engine ({wants}) after "
                f"{limit:g} s ({GPU_WAIT_ENV} sets the wait)"
            )

    def _ask_autoscaler(self) -> None:
        gpus = float(self.demand.get("GPU", 0.0))
        if not gpus:
            return
        from pipelines.engines.stages.gpu_request import GPURequest

        if self.request is None:
            self.request = GPURequest(f"engine-host-{os.getpid()}")
        try:
            self.request.set([gpus])
        except Exception:  # noqa: BLE001 (no autoscaler to ask: the wait still ends)
            return

    def _settled(self) -> None:
        self.homeless_since = None
        if self.request is not None:
            with contextlib.suppress(Exception):  # a request lapses on its own (TTL)
                self.request.clear()
            self.request = None


def watches(
    hosts: list[Any], model: str, demand: dict[str, float], wait_s: float
) -> list[HostWatch]:
    """One watch per host, for a forwarder's constructor."""
    return [HostWatch(host, model, demand, wait_s) for host in hosts]


def forwarder_kwargs(hosts: list[Any], model: str, demand: dict[str, float]) -> dict[str, Any]:
    """What a forwarder is built with: the hosts, the model and what a host needs of a node,
    and this driver's wait for a node (`gpu_wait_s()`)."""
    return {"hosts": hosts, "model": model, "demand": demand, "wait_s": gpu_wait_s()}


def answer(watch: HostWatch, *args: Any) -> Any:
    """The host's answer to `run(*args)`, watched while it is awaited (a synchronous
    forwarder); the host's `run` returns `(node address, answer)`."""
    import ray

    ref = watch.host.run.remote(*args)
    while not ray.wait([ref], timeout=WATCH_POLL_S)[0]:
        watch.check()
    node, out = ray.get(ref)
    watch.answered(node)
    return out


async def answer_async(watch: HostWatch, *args: Any) -> Any:
    """`answer` for a forwarder that runs in an event loop (Ray's stage UDFs)."""
    future = asyncio.wrap_future(watch.host.run.remote(*args).future())
    while True:
        done, _ = await asyncio.wait({future}, timeout=WATCH_POLL_S)
        if done:
            break
        watch.check()
    node, out = future.result()
    watch.answered(node)
    return out
