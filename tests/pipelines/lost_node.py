"""What the lost-node tests share: finding the node that hosts an engine, draining it as the
autoscaler does for a spot reclaim, killing it, and counting a run's rows at the source.

A node is lost by SIGKILL of its raylet (the machine gone: no goodbye to the GCS). A drain is
Ray 2.60's own: `ray drain-node --reason DRAIN_NODE_REASON_PREEMPTION
--deadline-remaining-seconds N` calls `GcsClient.drain_node` with the reason and deadline the
autoscaler v2 sends for a preempted instance (ray/scripts/scripts.py at ray-2.60.0); the
instance is then terminated at the deadline, here by SIGKILL of the raylet.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pipelines.engines.session.ray_reaper import descendants
from tests.pipelines.ray_nodes import VENV_BIN, RayCluster, raylet


def titled(root: int, titles: tuple[str, ...]) -> list[int]:
    """Pids of Ray workers under `root` whose process title starts with `ray::<title>` for
    one of `titles`."""
    found = []
    for pid in descendants(root):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if any(cmdline.startswith(f"ray::{title}") for title in titles):
            found.append(pid)
    return found


def hosting(cluster: RayCluster, titles: tuple[str, ...]) -> list[int]:
    """Indexes of the live workers running an actor of one of `titles` (its `ray::`
    process)."""
    return [
        i
        for i, proc in enumerate(cluster.workers)
        if proc.poll() is None and raylet(proc.pid) is not None and titled(proc.pid, titles)
    ]


def _ask_gcs(cluster: RayCluster, expression: str) -> dict[str, str]:
    """A JSON-able `expression` over `ray` evaluated by a driver of the cluster, run in a
    subprocess (this process stays out of the cluster)."""
    probe = (
        "import json, ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
        f"print(json.dumps({expression}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, cluster.address],
        env=cluster.env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    found: dict[str, str] = json.loads(run.stdout.strip().splitlines()[-1])
    return found


def node_ids(cluster: RayCluster) -> dict[str, str]:
    """Live node address -> node id (hex), asked of the GCS."""
    return _ask_gcs(
        cluster, "{n['NodeManagerAddress']: n['NodeID'] for n in ray.nodes() if n['Alive']}"
    )


def placement_groups(cluster: RayCluster) -> dict[str, str]:
    """Placement group id -> state, every group the cluster knows."""
    return _ask_gcs(cluster, "{k: v['state'] for k, v in ray.util.placement_group_table().items()}")


def drain(cluster: RayCluster, worker: int, deadline_s: int) -> subprocess.CompletedProcess:
    """Ray's drain of a worker for preemption with a deadline, as the autoscaler sends it."""
    node_id = node_ids(cluster)[cluster.nodes[worker].ip]
    return subprocess.run(
        [str(VENV_BIN / "ray"), "drain-node", "--address", cluster.address,
         "--node-id", node_id, "--reason", "DRAIN_NODE_REASON_PREEMPTION",
         "--reason-message", "spot instance reclaimed (test)",
         "--deadline-remaining-seconds", str(deadline_s)],
        env=cluster.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def kill_node(cluster: RayCluster, worker: int) -> None:
    """The worker's machine gone: its raylet killed, no word to the GCS."""
    pid = raylet(cluster.workers[worker].pid)
    assert pid is not None, f"worker {worker} has no raylet to kill"
    os.kill(pid, signal.SIGKILL)


def wait_for(what: str, check, proc: subprocess.Popen, log: Path, limit_s: float = 900) -> None:  # noqa: ANN001
    """Until `check()` is true; fails if `proc` ends first or `limit_s` passes."""
    deadline = time.monotonic() + limit_s
    while not check():
        assert proc.poll() is None, f"the run ended before {what}:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"no {what} in {limit_s:g} s"
        time.sleep(0.5)


def geosee(  # noqa: ANN201
    cluster: RayCluster,
    args: list[str],
    log: Path,
    env: dict[str, str] | None = None,
    module: str = "pipelines",
):
    """`python -m pipelines ARGS` (or another `module`'s, a test scenario's) as a driver of
    the cluster, its output to `log`."""
    from tests.conftest import REPO

    sink = log.open("w")
    return subprocess.Popen(
        [sys.executable, "-m", module, *args], cwd=REPO,
        env={**cluster.env, "RAY_ADDRESS": cluster.address, **(env or {})},
        stdout=sink, stderr=subprocess.STDOUT,
    )  # fmt: skip


def weight_downloads(server_pid: int, prefix: str) -> int:
    """GETs of a model's weights (`model.safetensors`) under `prefix` that the S3 server on
    loopback answered: moto logs every request to its output file, read here through
    /proc (counted at the source: a node's download of the mirror, whoever asked). A
    ranged GET's line is coloured (its status 206), so the method is matched unquoted."""
    log = Path(f"/proc/{server_pid}/fd/1").read_bytes().decode(errors="replace")
    return sum(
        1
        for line in log.splitlines()
        if "GET /" in line and prefix in line and "model.safetensors" in line
    )


def engine_errors(root) -> list[str]:  # noqa: ANN001  (a store Location)
    """The `engine_error` of every row in the raw shards under `root` that has one: a row
    the engine never answered, written with its error instead of a reply."""
    from store.shards import shard_files
    from store.storage import read_table

    return [
        str(e)
        for f in shard_files(root)
        for e in read_table(f, ["engine_error"])[0].to_pylist()
        if e is not None
    ]
