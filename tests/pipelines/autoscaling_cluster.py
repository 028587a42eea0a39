"""An autoscaling Ray cluster on this machine: Ray's fake multi-node provider, which its own
autoscaler tests use (`ray.cluster_utils.AutoscalingCluster`), with a worker node type taken
from cluster.yaml (its name and logical GPUs).

`AutoscalingCluster` itself cannot be used here: its `start()` runs `ray stop --force`, which
would stop every Ray on this shared machine, and the config template it reads
(`fake_multi_node/example.yaml`) is not in Ray's wheel. So this builds the same config (the
template's keys, from ray-project/ray `python/ray/autoscaler/_private/fake_multi_node/
example.yaml`, as `AutoscalingCluster._generate_config` merges them) and starts the head as
`AutoscalingCluster.start()` does (`ray start --head --autoscaling-config=...` with
AUTOSCALER_UPDATE_INTERVAL_S=1 and RAY_FAKE_CLUSTER=1), but `--block`, in a session of its
own, on free ports, stopped by process group. The autoscaler (the head's monitor process)
launches worker nodes as processes under the head; they go with it.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipelines.engines.session.ray_reaper import descendants
from tests.conftest import REPO
from tests.pipelines.processes import free_ports
from tests.pipelines.ray_nodes import HEAD_IP, NODE_PORTS, VENV_BIN, node_ports, ray_env, start
from tests.pipelines.ray_nodes import stop as stop_group

# Ray's fake_multi_node/example.yaml, less its two example worker types (replaced below).
FAKE_MULTINODE_TEMPLATE: dict[str, Any] = {
    "cluster_name": "fake_multinode",
    "max_workers": 8,
    "provider": {
        "type": "fake_multinode",
        "use_node_id_as_ip": True,
        "disable_node_updaters": True,
        "disable_launch_config_check": True,
    },
    "head_node_type": "ray.head.default",
    "auth": {},
    "upscaling_speed": 1.0,
    "idle_timeout_minutes": 0.1,
    "docker": {},
    "initialization_commands": [],
    "setup_commands": [],
    "head_setup_commands": [],
    "worker_setup_commands": [],
    "head_start_ray_commands": [],
    "worker_start_ray_commands": [],
    "file_mounts": {},
    "cluster_synced_files": [],
    "file_mounts_sync_continuously": False,
    "rsync_exclude": [],
    "rsync_filter": [],
}
HEAD_TYPE = "ray.head.default"
OBJECT_STORE = 200 * 1024 * 1024  # per node: this machine's memory is shared
WORKER_CPUS = 2  # logical CPUs of a GPU worker here (cluster.yaml's 96 would flood 2 cores)
# What a probe driver prints before its result line (autoscaling_cluster.AutoscalingHead.probe).
PROBE_MARK = "GEOSEE-PROBE "


def gpu_worker_types(cluster_yaml: Path, max_workers: int = 1) -> dict[str, Any]:
    """cluster.yaml's GPU worker node types as fake-provider types: the same names and
    GPU (and accelerator) resources, WORKER_CPUS CPUs, at most `max_workers` nodes each."""
    config = yaml.safe_load(cluster_yaml.read_text())
    types = {}
    for name, node in config["available_node_types"].items():
        resources = dict(node.get("resources") or {})
        if name == config["head_node_type"] or not resources.get("GPU"):
            continue
        resources.update(CPU=WORKER_CPUS, object_store_memory=OBJECT_STORE)
        types[name] = {
            "resources": resources,
            "node_config": {},
            "min_workers": 0,
            "max_workers": max_workers,
        }
    return types


def fake_config(
    head_cpus: int, worker_types: dict[str, Any], gcs_address: str, idle_minutes: float
) -> dict[str, Any]:
    """The autoscaling config `AutoscalingCluster._generate_config` would build, pointed at
    this head's GCS (the provider otherwise assumes port 6379)."""
    config = copy.deepcopy(FAKE_MULTINODE_TEMPLATE)
    config["available_node_types"] = {
        **copy.deepcopy(worker_types),
        HEAD_TYPE: {"resources": {"CPU": head_cpus}, "node_config": {}, "max_workers": 0},
    }
    config["provider"]["gcs_address"] = gcs_address
    config["idle_timeout_minutes"] = idle_minutes
    return config


@dataclass
class AutoscalingHead:
    """A running fake-autoscaling head: its GCS address, env for drivers, logs, config."""

    address: str
    env: dict[str, str]
    proc: subprocess.Popen
    temp: Path
    config: dict[str, Any]

    def probe(self, code: str, timeout: float = 120) -> str:
        """Run `code` in a driver joined to this cluster; the last line it printed that starts
        with PROBE_MARK, without the mark. Ray's driver prints autoscaler events on stdout
        too, at any time up to its exit ("(autoscaler +0s) Removing 1 nodes ..."), so the
        result is found by its mark, not by its place."""
        script = f"import ray, sys\nray.init(address={self.address!r}, logging_level='ERROR')\n"
        run = subprocess.run(
            [sys.executable, "-c", script + code],
            env={**self.env, "RAY_SCHEDULER_EVENTS": "0"},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        marked = [
            line.removeprefix(PROBE_MARK)
            for line in run.stdout.splitlines()
            if line.startswith(PROBE_MARK)
        ]
        assert marked, f"the probe printed no {PROBE_MARK!r} line: {run.stdout[-2000:]}"
        return marked[-1]

    def alive_nodes(self) -> list[dict[str, Any]]:
        """Alive nodes with their resources (from a probe driver)."""
        alive = "[n['Resources'] for n in ray.nodes() if n['Alive']]"
        code = f"import json\nprint({PROBE_MARK!r} + json.dumps({alive}))"
        return list(json.loads(self.probe(code)))

    def resource_request(self) -> list[dict[str, float]]:
        """The standing `request_resources` request (autoscaler v1 keeps it in the GCS KV)."""
        code = (
            "from ray.experimental.internal_kv import _internal_kv_get\n"
            f"print({PROBE_MARK!r} + "
            "(_internal_kv_get(b'autoscaler_resource_request') or b'[]').decode())"
        )
        return list(json.loads(self.probe(code)))

    def monitor_log(self) -> str:
        """What the autoscaler logged (its launches and terminations)."""
        logs = self.temp / "session_latest" / "logs"
        return "".join(
            p.read_text(errors="replace") for p in sorted(logs.glob("monitor*")) if p.is_file()
        )


@contextmanager
def autoscaling_head(
    logs: Path,
    head_cpus: int,
    worker_types: dict[str, Any],
    idle_minutes: float = 0.1,
    node_env: dict[str, str] | None = None,
) -> Iterator[AutoscalingHead]:
    """The head (`head_cpus` CPUs, no GPU) with the fake autoscaler over `worker_types`;
    `node_env` goes into the environment of every node (and so of its workers)."""
    env = {**ray_env(), **(node_env or {})}
    temp = Path(tempfile.mkdtemp(prefix="ah", dir="/tmp"))  # short: socket paths are limited
    gcs, client, dashboard, *ports = free_ports(3 + NODE_PORTS)
    address = f"{HEAD_IP}:{gcs}"
    config = fake_config(head_cpus, worker_types, address, idle_minutes)
    config_file = logs / "autoscaling.json"
    config_file.write_text(json.dumps(config))
    head_env = {**env, "AUTOSCALER_UPDATE_INTERVAL_S": "1", "RAY_FAKE_CLUSTER": "1"}
    cmd = [str(VENV_BIN / "ray"), "start", "--head", "--block",
           f"--autoscaling-config={config_file}", "--num-cpus", str(head_cpus),
           "--num-gpus", "0", "--object-store-memory", str(OBJECT_STORE),
           "--include-dashboard=false", "--dashboard-port", str(dashboard),
           "--node-ip-address", HEAD_IP, "--port", str(gcs),
           "--temp-dir", str(temp), "--ray-client-server-port", str(client),
           *node_ports(ports)]  # fmt: skip
    proc = start(cmd, head_env, logs / "head.log")
    head = AutoscalingHead(address, env, proc, temp, config)
    started: set[int] = set()
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None, (logs / "head.log").read_text()[-3000:]
            try:
                if head.alive_nodes():
                    break
            except (AssertionError, subprocess.TimeoutExpired):
                pass
            assert time.monotonic() < deadline, "the autoscaling head did not come up in 300 s"
            time.sleep(2)
        yield head
    finally:
        started = set(descendants(proc.pid)) if proc.poll() is None else set()
        stop_group(proc)
        for pid in started:  # a worker node's process that left the head's group
            try:
                if b"ray" in Path(f"/proc/{pid}/cmdline").read_bytes():  # still ours, not reused
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass
        for name in ("monitor.log", "monitor.out", "monitor.err", "raylet.out"):
            path = temp / "session_latest" / "logs" / name
            if path.is_file():  # kept with the test's logs, for a failure's report
                (logs / f"head-{name}").write_bytes(path.read_bytes())
        shutil.rmtree(temp, ignore_errors=True)


def cluster_yaml() -> Path:
    """The repository's cluster-launcher config."""
    return REPO / "cluster.yaml"
