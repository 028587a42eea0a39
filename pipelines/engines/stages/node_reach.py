"""Whether every node of the cluster can write and read the results store, asked before a run.

The driver writes the shards, but the nodes use the store too, each with its own credentials
(the environment its raylet started with, or its instance profile): the engines write their
request-cache chunks there (store.request_cache, which only warns once when a write fails,
so the answers silently stop being kept) and read the model mirrors (Ray's downloader,
store.model_mirror.fetch_mirror). A node whose credentials can read but not write, or not
reach the store at all, used to degrade or fail obscurely mid-run. So on a cluster of
several nodes each live node writes a tiny object under the results, reads it back and
deletes it, in a task pinned to it (num_cpus=0, so a busy node runs it too) with the
environment the engines get (endpoint_env); a node that fails, or does not answer within
PROBE_TIMEOUT_S, refuses the run with one line (exit 2) before any settings, run record,
shard or mirror is written. The probes live in a folder of this check's own,
`<out>/.node-check-<token>/`, which the driver deletes in every case (only a node that did
not answer in time and wrote after that could leave its object behind).
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from dataclasses import dataclass

from store.errors import UsageError
from store.model_mirror import endpoint_env
from store.storage import Location, RemotePath, described, location

PROBE_PREFIX = ".node-check-"  # <out>/.node-check-<token>/<index>-<node ip>: one per node
# Bounds one probe: a worker's start on a busy node, then a write, a read and a delete, each
# with store.retries' budget (at most 51 s of backoff for a store that does not answer).
PROBE_TIMEOUT_S = 120.0
REASON_CHARS = 240
# Credentials a node's error text must not carry: its own AWS variables' values, and any
# AWS access key id (AKIA... long-term, ASIA... temporary).
_SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID")
_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{12,}\b")


class NodeStoreError(UsageError):
    """A node of the cluster cannot write (or read) the results store."""


@dataclass(frozen=True)
class NodeFailure:
    """A node that failed the check: its address and why (one line, no credentials)."""

    ip: str
    reason: str


def first_line(err: BaseException | str) -> str:
    """The first non-empty line of an error, without credentials, at most REASON_CHARS."""
    text = str(err).strip() or (type(err).__name__ if isinstance(err, BaseException) else "")
    line = " ".join(text.splitlines()[0].split()) if text else "no message"
    for name in _SECRET_ENV:
        value = os.environ.get(name, "")
        if len(value) >= 4:
            line = line.replace(value, "***")
    return _KEY_ID.sub("***", line)[:REASON_CHARS]


def probe(folder: str, name: str) -> str | None:
    """On a node: write `<folder>/<name>`, read it back, delete it; None when all three
    worked, else the error's first line."""
    path = location(folder) / name
    data = f"geosee node check {name}\n".encode()
    try:
        path.write_bytes(data)
        if path.read_bytes() != data:
            return "the probe object read back is not what was written"
        path.unlink()
    except Exception as err:  # any failure is the node's answer, not the driver's crash
        return first_line(err)
    return None


def unreachable(out: RemotePath, timeout_s: float = PROBE_TIMEOUT_S) -> list[NodeFailure]:
    """The live nodes that cannot write, read and delete a probe object under `out` (or
    did not answer within `timeout_s`); the probe folder is deleted in every case. A node
    that is gone by then (lost mid-check: its task could not run) is not named: losing a
    node is the run's to handle (docs/cluster.md, "Lost and reclaimed nodes"), and no node
    that remains writes through it."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")}
    folder = out / f"{PROBE_PREFIX}{uuid.uuid4().hex[:12]}"
    task = ray.remote(probe)
    env = {"env_vars": endpoint_env(out)}
    refs = {
        task.options(
            num_cpus=0, max_retries=0, runtime_env=env,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(str(folder), f"{i}-{ip}"): node_id  # unique in the folder: the index
        for i, (node_id, ip) in enumerate(nodes.items())
    }  # fmt: skip
    answers: dict[str, str | None] = {}
    try:
        ready, late = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
        for ref in ready:
            try:
                answers[refs[ref]] = ray.get(ref)
            except Exception as err:  # the task itself failed (its worker or node died)
                answers[refs[ref]] = first_line(err)
        for ref in late:
            ray.cancel(ref, force=True)
            answers[refs[ref]] = f"no answer in {timeout_s:g} s"
    finally:
        _remove(folder)
    failed = {node_id: reason for node_id, reason in answers.items() if reason is not None}
    if failed:  # only now: a node lost mid-check is no longer alive
        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        failed = {node_id: reason for node_id, reason in failed.items() if node_id in alive}
    return sorted((NodeFailure(nodes[n], r) for n, r in failed.items()), key=lambda f: f.ip)


def _remove(folder: RemotePath) -> None:
    """Delete the probe folder and whatever a node left in it (a probe that failed after
    its write, pyarrow's empty folder marker)."""
    with contextlib.suppress(FileNotFoundError):  # no node wrote anything
        folder.filesystem.delete_dir(folder.fs_path)


def refusal(command: str, out: RemotePath, failures: list[NodeFailure]) -> NodeStoreError:
    """The one line that refuses the run: each failing node, the store, what to do."""
    nodes = "; ".join(f"node {f.ip}: {f.reason}" for f in failures)
    return NodeStoreError(
        f"{command}: not every node of this Ray cluster can write the results store "
        f"{described(out)} ({nodes}); give every node write access to it (an instance "
        "profile or credentials on each node), then run again"
    )


def check_nodes_reach(out: Location, command: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """NodeStoreError when a live node of a cluster of several nodes cannot write, read and
    delete an object under the results store `out`; nothing to do for local results (one
    node: check_shared_results refuses them on several) or a single node."""
    from pipelines.engines.stages.node_sources import several_nodes  # heavy: not on the nodes

    if not isinstance(out, RemotePath) or not several_nodes():
        return
    failures = unreachable(out, timeout_s)
    if failures:
        raise refusal(command, out, failures)


def check_results_store(out: Location, command: str) -> None:
    """On a cluster of several nodes: results that every node reaches (check_shared_results:
    not one node's disk) and that every live node can write (check_nodes_reach)."""
    from pipelines.engines.stages.node_sources import check_shared_results

    check_shared_results(out, command)
    check_nodes_reach(out, command)
