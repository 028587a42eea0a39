"""Two Ray nodes on this machine: a head (1 CPU, where the sweep's driver and model tasks
live) and a worker node (4 CPUs) on another loopback address. A small sweep runs, its
pipeline work lands on the worker node, results go to an S3 server on loopback (moto), the
worker's raylet is killed with SIGKILL half-way, and the same sweep invocation still exits
0 with every expected row in the bucket once: none lost, none twice (Ray retries the node's
tasks and restarts its actors on the head; no second, resuming sweep is needed, and none is
run).

The cluster and the sweep's driver run in processes of their own (the driver reaches the
head through RAY_ADDRESS), so this test never touches the session's local Ray; both `ray
start --block` processes lead their own sessions and are stopped by process group. The S3
credentials reach every node through the environment the nodes start with; the endpoint
travels in the results URI."""

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
from pathlib import Path

import pytest

from geometry.item import SETUPS
from pipelines.engines.model_config import load_configs
from pipelines.engines.requests import SamplingConfig
from pipelines.noregeo.generate import MANIFEST
from pipelines.sweep.plan import expected_keys
from pipelines.sweep.run import _materialise
from store.records import model_dir
from store.storage import Location, children, location
from tests.conftest import REPO
from tests.pipelines.processes import descendants, free_ports
from tests.pipelines.raw_shards import raw_keys
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

VENV_BIN = Path(sys.executable).parent
HEAD_IP, WORKER_IP = "127.0.0.1", "127.0.0.2"  # two addresses: the driver joins the head
TASKS = ["C-BCT-CT", "U-PAP-PT"]
PER_TASK = 4
MODELS = ["oracle", "random", "tiny-llm"]
MAX_TOKENS = 64


def _ray_env() -> dict[str, str]:
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


def _node_ports(ports: list[int]) -> list[str]:
    """Flags for a node's six ports, taken from `ports` (all from one free_ports call: ports
    from separate calls may repeat, and a head once got its GCS port twice)."""
    node_mgr, obj_mgr, agent_grpc, agent_http, metrics, rt_env = ports
    return [
        "--node-manager-port", str(node_mgr), "--object-manager-port", str(obj_mgr),
        "--dashboard-agent-grpc-port", str(agent_grpc),
        "--dashboard-agent-listen-port", str(agent_http), "--metrics-export-port", str(metrics),
        "--runtime-env-agent-port", str(rt_env),
    ]  # fmt: skip


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, to the process group of one `ray start --block`: exactly the
    processes it started (the group survives its leader, so it is signalled either way)."""
    for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 30)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
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


def _raylet(root: int) -> int | None:
    for pid in descendants(root):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                return pid
        except OSError:
            continue
    return None


def _pipeline_workers(root: int) -> list[str]:
    """Titles of Ray workers under `root` that run a step of a Ray Data pipeline."""
    titles = []
    for pid in descendants(root):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if title.startswith("ray::") and ("MapBatches" in title or "MapWorker" in title):
            titles.append(title.split("\0")[0])
    return titles


@pytest.fixture
def cluster(tmp_path: Path, s3: S3Server) -> Iterator[tuple[str, subprocess.Popen, dict[str, str]]]:
    """(GCS address, the worker's `ray start` process, the env to reach them with)."""
    env = _ray_env()
    temps = [tempfile.mkdtemp(prefix=p, dir="/tmp") for p in ("mh", "mw")]  # short paths
    # Every port both nodes need from one call, so no two of them coincide.
    gcs, client, *ports = free_ports(2 + 6 + 6)
    address = f"{HEAD_IP}:{gcs}"
    ray = str(VENV_BIN / "ray")
    common = ["--block", "--num-gpus", "0"]
    procs: list[subprocess.Popen] = []
    try:
        head_cmd = [ray, "start", "--head", *common, "--num-cpus", "1", "--include-dashboard=false",
                    "--node-ip-address", HEAD_IP, "--port", str(gcs), "--temp-dir", temps[0],
                    "--ray-client-server-port", str(client), *_node_ports(ports[:6])]  # fmt: skip
        procs.append(_start(head_cmd, env, tmp_path / "head.log"))
        _wait_nodes(address, env, 1, procs[0])
        worker_cmd = [ray, "start", "--address", address, *common, "--num-cpus", "4",
                      "--node-ip-address", WORKER_IP, "--temp-dir", temps[1],
                      *_node_ports(ports[6:])]  # fmt: skip
        procs.append(_start(worker_cmd, env, tmp_path / "worker.log"))
        _wait_nodes(address, env, 2, procs[1])
        yield address, procs[1], env
    finally:
        for proc in reversed(procs):
            _stop(proc)
        for temp in temps:
            shutil.rmtree(temp, ignore_errors=True)


def _wait_nodes(address: str, env: dict[str, str], n: int, proc: subprocess.Popen) -> None:
    """Until the cluster has `n` live nodes (asked from a subprocess: no Ray here)."""
    probe = (
        "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
        "print(sum(1 for n in ray.nodes() if n['Alive']))"
    )
    deadline = time.monotonic() + 300
    while True:
        assert proc.poll() is None, f"`ray start` exited with {proc.returncode}"
        run = subprocess.run(
            [sys.executable, "-c", probe, address], env=env, capture_output=True, text=True
        )
        if run.returncode == 0 and run.stdout.strip().splitlines()[-1:] == [str(n)]:
            return
        assert time.monotonic() < deadline, f"{n} node(s) not up in 300 s: {run.stderr[-2000:]}"
        time.sleep(2)


def _sweep(address: str, env: dict[str, str], out: str, log: Path) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "pipelines", "sweep", "--out", out,
        "--only", ",".join(MODELS), "--tasks", ",".join(TASKS), "--per-task", str(PER_TASK),
        "--max-tokens", str(MAX_TOKENS), "--batch-size", "2", "--shard-rows", "2",
        "--baseline-delay", "1.0", "--cpu-parallel", str(len(MODELS)),
        "--progress-interval", "5",
    ]  # fmt: skip
    with log.open("wb") as sink:
        return subprocess.Popen(
            cmd, cwd=REPO, env={**env, "RAY_ADDRESS": address}, stdout=sink,
            stderr=subprocess.STDOUT,
        )  # fmt: skip


def _expected(out: Location) -> dict[str, set[str]]:
    """Model -> every request key the sweep should write (from the items it generated)."""
    items = out / "items"
    assert (items / MANIFEST).is_file()
    files = children(items, "part-*.parquet")
    sampling = SamplingConfig(0.0, MAX_TOKENS, 0)
    configs = {c.name: c for c in load_configs(REPO / "configs" / "models")}
    want: dict[str, set[str]] = {}
    for name in MODELS:
        cfg = _materialise(configs[name], out)
        setups = [s for s in cfg.setups if s in SETUPS]
        want[name] = set().union(
            *(expected_keys(files, cfg, TASKS, s, None, sampling) for s in setups)
        )
    return want


def _rows_on_disk(out: Location) -> int:
    root = out / "noregeo"
    return len(raw_keys(root)) if root.is_dir() else 0


@pytest.mark.slow  # about 5-7 min on two busy cores; still part of `make test`
@pytest.mark.timeout(1800)  # the waits below fail first, with their own message
def test_sweep_survives_a_killed_worker_node(cluster, tmp_path: Path, s3: S3Server) -> None:
    address, worker, env = cluster
    uri = s3.uri("multinode")
    out = location(uri)
    log = tmp_path / "sweep.log"
    sweep = _sweep(address, env, uri, log)
    try:
        deadline = time.monotonic() + 600
        on_worker: list[str] = []
        while not (on_worker and _rows_on_disk(out)):
            assert sweep.poll() is None, "the sweep ended before the kill:\n" + log.read_text()
            assert time.monotonic() < deadline, "no pipeline work on the worker node in 600 s"
            on_worker = _pipeline_workers(worker.pid)
            time.sleep(0.5)
        raylet = _raylet(worker.pid)
        assert raylet is not None
        rows_at_kill = _rows_on_disk(out)
        os.kill(raylet, signal.SIGKILL)
        rc = sweep.wait(timeout=600)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    text = log.read_text()
    print(f"killed raylet {raylet} with {rows_at_kill} rows on disk; worker ran {on_worker}")
    print(text[-4000:])
    assert rc == 0, text[-4000:]
    want = _expected(out)
    assert rows_at_kill < sum(len(v) for v in want.values())  # the kill came before the end
    for name, keys in want.items():
        got = raw_keys(model_dir(out, "noregeo", name))
        assert len(got) == len(set(got)), f"{name}: {len(got) - len(set(got))} duplicate rows"
        assert set(got) == keys, (
            f"{name}: {len(keys - set(got))} lost, {len(set(got) - keys)} extra"
        )
