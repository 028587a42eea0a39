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
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from geometry.item import SETUPS
from pipelines.engines.models.config_yaml import load_configs
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.engines.session.ray_reaper import descendants
from pipelines.noregeo.generate import MANIFEST
from pipelines.sweep.plan import expected_keys
from pipelines.sweep.run import _materialise
from store.records import model_dir
from store.storage import Location, children, location
from tests.conftest import REPO
from tests.pipelines.raw_shards import raw_keys
from tests.pipelines.ray_nodes import Node, ray_cluster, raylet
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

WORKER_IP = "127.0.0.2"  # the head is on 127.0.0.1, where the driver joins it
TASKS = ["C-BCT-CT", "U-PAP-PT"]
PER_TASK = 4
MODELS = ["oracle", "random", "tiny-llm"]
MAX_TOKENS = 64


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
    with ray_cluster(tmp_path, head_cpus=1, workers=[Node(WORKER_IP, cpus=4)]) as nodes:
        yield nodes.address, nodes.workers[0], nodes.env


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
    sampling = SamplingConfig(max_tokens=MAX_TOKENS)
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
        killed = raylet(worker.pid)
        assert killed is not None
        rows_at_kill = _rows_on_disk(out)
        os.kill(killed, signal.SIGKILL)
        rc = sweep.wait(timeout=600)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    text = log.read_text()
    print(f"killed raylet {killed} with {rows_at_kill} rows on disk; worker ran {on_worker}")
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
