"""Ray nodes of a test's own on this machine: a head and worker nodes, each a `ray start
--block` process leading its own session on a loopback address of its own (127.0.0.x), so a
test never touches the session's local Ray and stops exactly the processes it started (by
process group).

    with ray_cluster(tmp_path, head_cpus=1, workers=[Node("127.0.0.2", cpus=4)]) as cluster:
        subprocess.run([...], env={**cluster.env, "RAY_ADDRESS": cluster.address})
        os.kill(raylet(cluster.workers[0].pid), signal.SIGKILL)
        cluster.add_worker(Node("127.0.0.3", cpus=4, gpus=1))  # a late node (autoscaler)

The nodes and drivers run from the venv of the running interpreter (its `ray`), with token
auth (`ray_env`)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pipelines.engines.session.ray_reaper import descendants
from tests.conftest import REPO
from tests.pipelines.processes import free_ports

VENV_BIN = Path(sys.executable).parent
HEAD_IP = "127.0.0.1"  # drivers started without --node-ip-address join the head's address
NODE_PORTS = 6  # ports one node takes (node_ports)
NODES_UP_S = 300
HEAD_TRIES = 3  # starts of the head node, each with its own temp dir and ports


def ray_env() -> dict[str, str]:
    """Token auth for the nodes and the driver, set before their Ray is imported. The token
    is the one any Ray client of this user already keeps in ~/.ray/auth_token. (The `s3`
    fixture has put its credentials in os.environ, so they are copied here too.)"""
    token_file = Path.home() / ".ray" / "auth_token"
    token = token_file.read_text().strip() if token_file.is_file() else secrets.token_hex(16)
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "OMP_NUM_THREADS": "1",
    }
    env.pop("RAY_ADDRESS", None)
    return env


def node_ports(ports: list[int]) -> list[str]:
    """Flags for a node's six ports, taken from `ports` (all from one free_ports call: ports
    from separate calls may repeat, and a head once got its GCS port twice)."""
    node_mgr, obj_mgr, agent_grpc, agent_http, metrics, rt_env = ports
    return [
        "--node-manager-port", str(node_mgr), "--object-manager-port", str(obj_mgr),
        "--dashboard-agent-grpc-port", str(agent_grpc),
        "--dashboard-agent-listen-port", str(agent_http), "--metrics-export-port", str(metrics),
        "--runtime-env-agent-port", str(rt_env),
    ]  # fmt: skip


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """`cmd` in a session of its own (so its process group is exactly what it starts)."""
    with log.open("wb") as out:
        return subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, to the process group of one `ray start --block`: exactly the
    processes it started (the group survives its leader, so it is signalled either way).
    Ray's graceful stop was measured at over 20 s of waiting per node (teardowns of ~22 s in
    CI); what is left after 5 s is killed (workers end with their raylet)."""
    for sig, wait_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 30)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            proc.poll()  # reap the leader: a zombie still counts as a member of its group
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        else:
            continue
        break
    if proc.poll() is None:
        proc.wait(timeout=30)


def raylet(root: int) -> int | None:
    """Pid of the live raylet under `root` (a node's `ray start` process), None when none is
    (a dead raylet's zombie does not count)."""
    for pid in descendants(root):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                return None if stat.rsplit(")", 1)[1].split()[0] == "Z" else pid
        except OSError:
            continue
    return None


class NodeStartError(AssertionError):
    """A node's raylet died while it started, or its `ray start` exited. Ray 2.60's raylet
    waits 15 s (fixed) for its dashboard agent's port files and aborts; on two busy cores the
    agent took longer, and a worker's `ray start --block` then waits forever for a node that
    is gone, while the head's exits 1 ("timed out during startup")."""


def wait_nodes(
    address: str,
    env: dict[str, str],
    n: int,
    proc: subprocess.Popen,
    gpus: float | None = None,
    log: Path | None = None,
) -> None:
    """Until the cluster has `n` live nodes (asked from a subprocess: no Ray here), and
    `gpus` GPUs in its resources when given, and `log` (the `ray start` output of the node
    started last) says it is up: a node is listed alive before its GPU shows in
    cluster_resources(), and a sweep started then once planned for none."""
    probe = (
        "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
        "print(sum(1 for n in ray.nodes() if n['Alive']), "
        "float(ray.cluster_resources().get('GPU', 0)))"
    )
    want = f"{n} {float(gpus)}" if gpus is not None else None
    deadline = time.monotonic() + NODES_UP_S
    had_raylet = False
    while True:
        if proc.poll() is not None:
            exited = f"`ray start` exited with {proc.returncode} while its node started"
            raise NodeStartError(exited)
        alive_raylet = raylet(proc.pid) is not None
        if had_raylet and not alive_raylet:
            raise NodeStartError(f"the raylet of `ray start` {proc.pid} died while it started")
        had_raylet = had_raylet or alive_raylet
        try:  # a probe of a head whose raylet died hangs in ray.init
            run = subprocess.run(
                [sys.executable, "-c", probe, address],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired as err:
            run = subprocess.CompletedProcess(err.cmd, 1, "", str(err))
        last = run.stdout.strip().splitlines()[-1:]
        up = log is None or b"will now block forever" in log.read_bytes()
        if run.returncode == 0 and last and up:
            alive = last[0].split()
            if alive[0] == str(n) and (want is None or last[0] == want):
                return
        assert time.monotonic() < deadline, (
            f"{n} node(s) not up in {NODES_UP_S} s: {last} {run.stderr[-2000:]}"
        )
        time.sleep(2)


@dataclass(frozen=True)
class Node:
    """A worker node to start: its loopback address and the resources it declares;
    `hidden`: folders of the head's disk this node must not see (a machine of its own),
    `env`: what its environment adds."""

    ip: str
    cpus: int
    gpus: int = 0  # logical GPUs (vLLM's CPU build ignores them; Ray schedules by them)
    hidden: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


# A real cluster's nodes share no disk. As root, `unshare -m --propagation private` gives
# a process tree its own mounts (util-linux; nothing propagates back to this machine's): an
# empty tmpfs over each hidden folder, then `ray start` in its place (same pid, so the
# node's process group is still the one `stop` signals). Each hidden folder is empty and
# writable there, as a fresh node's cache or temp folder is.
HIDE_AND_EXEC = (
    'set -e; n=$1; shift; while [ "$n" -gt 0 ]; do '
    'mount -t tmpfs -o size=4g,mode=0755 node-private "$1"; shift; n=$((n-1)); done; exec "$@"'
)


# Tests that mount a tmpfs of their own (`unshare -m`): root and unshare, as on this machine
# and CI's.
needs_private_mounts = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"), reason="mounts a tmpfs: needs root"
)


def private_mounts(hidden: tuple[str, ...], cmd: list[str]) -> list[str]:
    """`cmd` run in a mount namespace of its own where each of `hidden` is an empty tmpfs."""
    if not hidden:
        return cmd
    for folder in hidden:
        Path(folder).mkdir(parents=True, exist_ok=True)  # a mount point must exist
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", HIDE_AND_EXEC, "sh",
            str(len(hidden)), *hidden, *cmd]  # fmt: skip


@dataclass
class RayCluster:
    """A head and its worker nodes; `workers[i]` is the `ray start` process of the i-th."""

    address: str
    env: dict[str, str]
    logs: Path
    head: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)  # what each of `workers` declared
    temps: list[str] = field(default_factory=list)
    ports: set[int] = field(default_factory=set)  # every port a node of ours was given

    def _join(self, node: Node, ports: list[int], tries: int = 3) -> subprocess.Popen:
        """Start `node` with `ports`; a node whose raylet died while starting is stopped and
        started again (fresh temp dir and ports), up to `tries` times in all."""
        for attempt in range(tries):
            try:
                return self._join_once(node, ports)
            except NodeStartError:
                stop(self.workers.pop())  # so workers[i] stays the i-th node that came up
                self.nodes.pop()
                if attempt == tries - 1:
                    raise
                ports = self._fresh_ports()
        raise AssertionError("unreachable")

    def _fresh_ports(self) -> list[int]:
        """Ports from a free_ports call of their own, redrawn while any repeats a port an
        earlier node of ours was given."""
        while True:
            ports = free_ports(NODE_PORTS)
            if not self.ports.intersection(ports) and len(set(ports)) == NODE_PORTS:
                return ports

    def _join_once(self, node: Node, ports: list[int]) -> subprocess.Popen:
        temp = tempfile.mkdtemp(prefix=f"mw{len(self.workers)}", dir="/tmp")  # short path
        self.temps.append(temp)
        self.ports.update(ports)
        cmd = [str(VENV_BIN / "ray"), "start", "--address", self.address, "--block",
               "--num-cpus", str(node.cpus), "--num-gpus", str(node.gpus),
               "--node-ip-address", node.ip, "--temp-dir", temp, *node_ports(ports)]  # fmt: skip
        log = self.logs / f"worker{len(self.workers)}.log"
        alive = [*self.alive_workers(), node]  # this one has no raylet yet
        # A node that hides the head's folders hides the head's Ray temp folder too.
        hidden = (*node.hidden, self.temps[0]) if node.hidden else ()
        proc = start(private_mounts(hidden, cmd), {**self.env, **dict(node.env)}, log)
        self.workers.append(proc)
        self.nodes.append(node)
        gpus = sum(n.gpus for n in alive)
        wait_nodes(self.address, self.env, 1 + len(alive), proc, gpus, log)
        return proc

    def alive_workers(self) -> list[Node]:
        """Worker nodes whose raylet still runs (a SIGKILLed raylet's node is dead)."""
        return [
            node
            for node, p in zip(self.nodes, self.workers, strict=True)
            if p.poll() is None and raylet(p.pid) is not None
        ]

    def add_worker(self, node: Node) -> subprocess.Popen:
        """Start one more worker node (as the autoscaler would) and wait until it is up."""
        return self._join(node, self._fresh_ports())

    def close(self) -> None:
        for proc in [*reversed(self.workers), self.head]:
            stop(proc)
        for i, temp in enumerate(self.temps):  # the nodes' own logs, for a failure's report
            logs = Path(temp) / "session_latest" / "logs"
            for name in ("raylet.out", "dashboard_agent.log", "gcs_server.out"):
                if (logs / name).is_file():
                    shutil.copy(logs / name, self.logs / f"node{i}-{name}")
            shutil.rmtree(temp, ignore_errors=True)


@contextmanager
def ray_cluster(logs: Path, head_cpus: int, workers: list[Node]) -> Iterator[RayCluster]:
    """A head with `head_cpus` CPUs and no GPU on HEAD_IP, then `workers`, each up before
    the next starts; every node stopped on exit. Logs go to `logs/head.log`,
    `logs/worker<i>.log`."""
    env = ray_env()
    cluster: RayCluster | None = None
    try:
        # The head, started again (fresh temp dir and ports) when its raylet died while it
        # started, as a worker's is (RayCluster._join): `ray start --head` exited 1 once in a
        # CI rehearsal, its raylet aborted after 15 s without the dashboard agent's port file.
        for attempt in range(HEAD_TRIES):
            head_temp = tempfile.mkdtemp(prefix="mh", dir="/tmp")  # short paths
            # Every port the first nodes need from one call, so no two of them coincide.
            gcs, client, *ports = free_ports(2 + NODE_PORTS * (1 + len(workers)))
            address = f"{HEAD_IP}:{gcs}"
            head_cmd = [str(VENV_BIN / "ray"), "start", "--head", "--block", "--num-gpus", "0",
                        "--num-cpus", str(head_cpus), "--include-dashboard=false",
                        "--node-ip-address", HEAD_IP, "--port", str(gcs),
                        "--temp-dir", head_temp, "--ray-client-server-port", str(client),
                        *node_ports(ports[:NODE_PORTS])]  # fmt: skip
            head = start(head_cmd, env, logs / "head.log")
            try:
                wait_nodes(address, env, 1, head, 0, logs / "head.log")
                break
            except BaseException as err:  # not a cluster yet: its close would not stop it
                stop(head)
                shutil.rmtree(head_temp, ignore_errors=True)
                if not isinstance(err, NodeStartError) or attempt == HEAD_TRIES - 1:
                    raise
        cluster = RayCluster(address, env, logs, head, temps=[head_temp])
        cluster.ports.update([gcs, client, *ports[:NODE_PORTS]])
        for i, node in enumerate(workers):
            cluster._join(node, ports[NODE_PORTS * (i + 1) : NODE_PORTS * (i + 2)])
        yield cluster
    finally:
        if cluster is not None:
            cluster.close()
