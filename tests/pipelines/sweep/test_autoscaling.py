"""The sweep against an autoscaling cluster on this machine (Ray's fake multi-node provider,
tests/pipelines/autoscaling_cluster.py), whose only GPU worker type is cluster.yaml's
on-demand one (`a100x8`: its name and 8 logical GPUs, 2 CPUs here):

1. A sweep of a baseline and a tiny model that asks for a GPU: the autoscaler adds a GPU
   worker for the model, every expected result lands once, and when the sweep has ended its
   resource request is cleared and the worker is released within the idle timeout (0.1 min
   here). Before issue 28 the sweep's `request_resources` was never withdrawn: the request
   stayed and held the worker for good, which the last two assertions catch.
2. `evaluate --engine vllm` on the same cluster, with no GPU worker up, asks the autoscaler
   and waits (saying so, within GEOSEE_GPU_WAIT_S) instead of failing at once with
   NoGPUError.

The drivers run with HOME set to a folder holding `ray_bootstrap_config.yaml`, as `ray up`
leaves it on a real head: that is where the sweep and the engines read how far the cluster
can grow (autoscaler v1 publishes nothing to the GCS). GPUs here are logical, so
GEOSEE_LOGICAL_GPUS=1 lets the hf GPU model compute on the CPU (without it, it would fail:
never silently on the CPU).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from pipelines.engines.models.config_yaml import load_configs
from pipelines.engines.models.tiny_model import build_tiny_model
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.noregeo.generate import MANIFEST
from pipelines.sweep.cluster_image import expected_image
from pipelines.sweep.plan import expected_keys
from store.records import model_dir
from store.storage import children, location
from tests.conftest import REPO
from tests.pipelines.autoscaling_cluster import (
    AutoscalingHead,
    autoscaling_head,
    cluster_yaml,
    gpu_worker_types,
)
from tests.pipelines.raw_shards import raw_keys
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

TASKS = ["C-BCT-CT"]
PER_TASK = 2
MAX_TOKENS = 16
GPU_MODEL = "tiny-gpu-llm"
MODELS = ["oracle", GPU_MODEL]
SCALE_DOWN_S = 300  # generous bound on 0.1 min idle timeout + the autoscaler's rounds


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[AutoscalingHead]:
    """The head and its autoscaler; the nodes it starts inherit the S3 credentials (the
    results live in a bucket: on a cluster of several nodes a local folder is refused)."""
    logs = tmp_path_factory.mktemp("autoscaling")
    types = gpu_worker_types(cluster_yaml())
    # The spot type is the same p4de on another market, which the fake provider does not
    # have: the on-demand type stands for both (tests/pipelines/sweep/test_cluster_yaml.py
    # checks Ray's choice between them).
    assert sorted(types) == ["a100x8", "a100x8-spot"]
    assert types["a100x8"]["resources"] == types["a100x8-spot"]["resources"]
    types = {"a100x8": types["a100x8"]}
    assert types["a100x8"]["resources"]["GPU"] == 8
    # The model tasks build their engine stages in workers on the head: the logical-GPU
    # switch goes to the nodes, not only to the drivers.
    logical = {"GEOSEE_LOGICAL_GPUS": "1"}
    with autoscaling_head(logs, 2, types, idle_minutes=0.1, node_env=logical) as head:
        yield head


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config folder: the oracle, and a tiny random LM configured as a GPU model (a hub
    model's shape: not `local`, tensor parallel 1)."""
    folder = tmp_path_factory.mktemp("models")
    (folder / "oracle.yaml").write_text((REPO / "configs/models/local/oracle.yaml").read_text())
    weights = build_tiny_model("llm", folder.parent / "tiny-llm-weights")
    (folder / f"{GPU_MODEL}.yaml").write_text(
        yaml.safe_dump(
            {
                "name": GPU_MODEL,
                "repo": str(weights),
                "revision": "local",
                "engine": "hf",
                "modality": "text",
                "setups": ["text"],
                "max_model_len": 2048,
                "dtype": "float32",
                "chat_template_notes": "tiny random LM standing in for a GPU model",
            }
        )
    )
    return folder


def _driver_env(head: AutoscalingHead, home: Path, wait_s: int) -> dict[str, str]:
    """A driver's env: the head's address, and a HOME with the launcher config `ray up`
    would have left (the fake cluster's node types, and the image the pins need)."""
    home.mkdir(exist_ok=True)
    bootstrap = {**head.config, "docker": {"image": expected_image()}}
    (home / "ray_bootstrap_config.yaml").write_text(yaml.safe_dump(bootstrap))
    return {
        **head.env,
        "RAY_ADDRESS": head.address,
        "HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "GEOSEE_LOGICAL_GPUS": "1",
        "GEOSEE_GPU_WAIT_S": str(wait_s),
    }


def _events(head: AutoscalingHead, text: str) -> int:
    """How often the autoscaler's event summary said `text` (its launches and removals)."""
    return len(_event_times(head.monitor_log(), text))


EVENT = re.compile(r"^(\S+ \S+)\s+INFO monitor.py:\d+ -- :event_summary:(.*)$")


def _gpu_request_times(log: str) -> list[datetime]:
    """When the autoscaler's status showed a standing request for GPUs."""
    times = []
    for block in log.split("======== Autoscaler status: ")[1:]:
        stamp, _, body = block.partition(" ========")
        asked = body.split("From request_resources:", 1)[-1].split("Pending Demands:", 1)[0]
        if "'GPU'" in asked:
            times.append(datetime.fromisoformat(stamp.strip()))
    return times


def _event_times(log: str, text: str) -> list[datetime]:
    """When the autoscaler's event summary said `text`."""
    found = (EVENT.match(line) for line in log.splitlines())
    return [
        datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
        for m in found
        if m and m.group(2).startswith(text)
    ]


def _gpu_workers(head: AutoscalingHead) -> int:
    return sum(1 for n in head.alive_nodes() if n.get("GPU"))


def _wait_no_gpu_worker(head: AutoscalingHead) -> float:
    start = time.monotonic()
    while _gpu_workers(head):
        assert time.monotonic() - start < SCALE_DOWN_S, (
            f"the GPU worker was not released within {SCALE_DOWN_S} s; standing request: "
            f"{head.resource_request()}\n{head.monitor_log()[-3000:]}"
        )
        time.sleep(3)
    return time.monotonic() - start


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_sweep_scales_up_for_the_gpu_model_then_releases_the_worker(
    cluster: AutoscalingHead, models: Path, tmp_path: Path, s3: S3Server
) -> None:
    assert _gpu_workers(cluster) == 0  # min_workers 0: the cluster starts without one
    out = location(s3.uri("autoscaling-sweep"))
    cmd = [
        sys.executable, "-m", "pipelines", "sweep", "--models", str(models),
        "--only", ",".join(MODELS), "--out", str(out), "--tasks", ",".join(TASKS),
        "--per-task", str(PER_TASK), "--max-tokens", str(MAX_TOKENS), "--batch-size", "2",
        "--shard-rows", "2", "--cpu-parallel", "1", "--progress-interval", "10",
    ]  # fmt: skip
    env = _driver_env(cluster, tmp_path / "home", wait_s=600)
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    text = run.stdout + run.stderr
    print(text[-4000:])
    assert run.returncode == 0, text[-4000:]
    assert "planning for 8 GPU(s)" in text  # from the bootstrap config: a100x8 x 1
    # The autoscaler added one GPU worker for the model (none was up before) and kept it
    # while the sweep asked for it: a request overwritten mid-sweep (Ray Data's autoscaling
    # coordinator replaces SDK requests every 20 s) let it go idle, be removed and re-added.
    log = cluster.monitor_log()
    assert _events(cluster, "Adding 1 node(s) of type a100x8") == 1, log[-3000:]
    last_asked = max(_gpu_request_times(log))
    assert all(t > last_asked for t in _event_times(log, "Removing 1 nodes of type a100x8"))
    # Every expected row once.
    files = children(out / "items", "part-*.parquet")
    assert (out / "items" / MANIFEST).is_file()
    sampling = SamplingConfig(max_tokens=MAX_TOKENS)
    for cfg in load_configs(models):
        want = set().union(
            *(expected_keys(files, cfg, TASKS, s, None, sampling) for s in cfg.setups)
        )
        got = raw_keys(model_dir(out, "noregeo", cfg.name))
        assert len(want) == PER_TASK * len(cfg.setups), cfg.name
        assert sorted(got) == sorted(want), cfg.name  # each once: none lost, none twice
    # The request is withdrawn, and the idle worker goes.
    assert not [b for b in cluster.resource_request() if b.get("GPU")]
    waited = _wait_no_gpu_worker(cluster)
    assert _events(cluster, "Removing 1 nodes of type a100x8") == 1
    print(f"GPU worker released {waited:.0f} s after the sweep")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_evaluate_vllm_waits_for_the_autoscaler_instead_of_failing_at_once(
    cluster: AutoscalingHead, models: Path, tmp_path: Path, s3: S3Server
) -> None:
    """No GPU worker is up (the sweep's went): `evaluate --engine vllm` asks for one and
    waits, and withdraws its request once the worker is up (it says so after). The engine
    build that follows (this venv has no vLLM) is past this test's point: it is stopped."""
    _wait_no_gpu_worker(cluster)
    items = s3.uri("autoscaling-eval/items")
    generate = [sys.executable, "-m", "pipelines", "generate", "--out", str(items),
                "--tasks", TASKS[0], "--per-task", "1", "--setups", "text"]  # fmt: skip
    env = _driver_env(cluster, tmp_path / "home", wait_s=600)
    made = subprocess.run(generate, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    cmd = [sys.executable, "-m", "pipelines", "evaluate", "--items", str(items),
           "--engine", "vllm", "--model", str(models / f"{GPU_MODEL}.yaml"),
           "--setups", "text", "--out", s3.uri("autoscaling-eval/results")]  # fmt: skip
    log = tmp_path / "evaluate.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:  # until the GPUs are up (the engine build after it is not this test's business)
        deadline = time.monotonic() + 700
        while f"{GPU_MODEL}: 8 GPU(s) up" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = log.read_text(errors="replace")
    print(text[-3000:])
    assert f"{GPU_MODEL}: waiting up to 600 s for 1 GPU(s)" in text, text[-3000:]
    assert "can grow to" not in text  # never the at-once NoGPUError
    assert not [b for b in cluster.resource_request() if b.get("GPU")]  # withdrawn
