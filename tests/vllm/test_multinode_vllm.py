"""`evaluate --engine vllm` on a cluster whose nodes share no disk.

A real cluster's worker nodes do not have the head's disk: not its Hugging Face cache (the
tokenizer copies and hub snapshots the driver makes), not its checkpoints, not its temp or
working folders. Ray Data places the vLLM processor's CPU stages with SPREAD and the engine
on a GPU worker, and Ray 2.60 passes a local `model_source` through unchanged, so on the
old code the engine and stages looked for the driver's folders on the worker and the run
failed. Here the worker node runs in a mount namespace of its own with each of those
folders an empty tmpfs (tests/pipelines/ray_nodes.py `Node.hidden`); the head has no CPU,
so every task and actor runs on the worker. Items, results and the model mirror live in an
S3 server on loopback (moto), which every node reaches, as a cluster's bucket.

No node is told the server's address: it travels in the results URI, and the stages'
downloader (Ray's boto3) gets it from there (store.model_mirror.endpoint_env).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.geobuild.rows import read_round
from store.model_mirror import MANIFEST, MIRRORS
from store.records import model_dir
from store.storage import location
from tests.conftest import REPO, SHARED
from tests.pipelines.raw_shards import raw_keys
from tests.pipelines.ray_nodes import Node, RayCluster, ray_cluster
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)
from tests.tiny_vlms import build_qwen2_vl

WORKER_IP = "127.0.0.2"
TASKS = "C-BCT-CT,U-PAP-PT"
PER_TASK = 2


def _hf_home() -> str:
    from huggingface_hub import constants

    return str(Path(constants.HF_HOME))


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, s3: S3Server, tiny_llm_dir: Path
) -> Iterator[RayCluster]:
    """A head with no CPU and a worker (3 CPUs, 1 logical GPU) that sees none of the head's
    private folders: the pytest temp root (the tiny models, the test's folders), the
    driver's Hugging Face home, the real model's folder and the head's Ray temp folder."""
    # The sweep builds its tiny models under the system's temp folder (pipelines/sweep/run.py).
    built = str(Path(tempfile.gettempdir()) / "geosee-models")
    hidden = (str(tmp_path_factory.getbasetemp()), _hf_home(), str(REPO / "models"), built)
    worker = Node(WORKER_IP, cpus=3, gpus=1, hidden=hidden)
    logs = tmp_path_factory.mktemp("cluster-logs")
    with ray_cluster(logs, head_cpus=0, workers=[worker]) as nodes:
        yield nodes


def _geosee(cluster: RayCluster, *args: str, log: Path) -> subprocess.CompletedProcess:
    env = {**cluster.env, "RAY_ADDRESS": cluster.address}
    with log.open("w") as sink:
        run = subprocess.run(
            [sys.executable, "-m", "pipelines", *args],
            cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, timeout=1200,
        )  # fmt: skip
    return run


@pytest.mark.timeout(1800)
def test_a_local_checkpoint_runs_on_a_worker_that_lacks_its_folder(
    cluster: RayCluster, s3: S3Server, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    items, out = s3.uri("mn/items"), s3.uri("mn/results")
    log = tmp_path / "geosee.log"
    gen = _geosee(cluster, "generate", "--out", items, "--per-task", str(PER_TASK),
                  "--tasks", TASKS, "--setups", "text", log=log)  # fmt: skip
    assert gen.returncode == 0, log.read_text()[-3000:]
    run = _geosee(cluster, "evaluate", "--items", items, "--engine", "vllm",
                  "--model", str(tiny_llm_dir), "--tasks", TASKS, "--setups", "text",
                  "--max-tokens", "24", "--out", out, log=log)  # fmt: skip
    text = log.read_text()
    assert run.returncode == 0, text[-4000:]
    root = location(out)
    rows = raw_keys(model_dir(root, "noregeo", tiny_llm_dir.name))
    assert len(rows) == 2 * PER_TASK and len(set(rows)) == len(rows)
    # What the worker loaded: the mirror in the bucket, complete.
    manifests = list((root / MIRRORS).rglob(MANIFEST))
    assert manifests, f"no model mirror under {root / MIRRORS}"


def _evaluate(cluster: RayCluster, s3: S3Server, log: Path, model: str, setups: str) -> str:
    """`evaluate --engine vllm` of `model` on its own results folder; its output."""
    items = s3.uri(f"walk/items-{setups.replace(',', '-')}")
    gen = _geosee(cluster, "generate", "--out", items, "--per-task", str(PER_TASK),
                  "--tasks", TASKS, "--setups", setups, "--image-size", "128", log=log)  # fmt: skip
    assert gen.returncode == 0, log.read_text()[-3000:]
    name = Path(model).name
    run = _geosee(cluster, "evaluate", "--items", items, "--engine", "vllm", "--model", model,
                  "--tasks", TASKS, "--setups", setups, "--max-tokens", "24",
                  "--out", s3.uri(f"walk/{name}"), log=log)  # fmt: skip
    text = log.read_text()
    assert run.returncode == 0, text[-4000:]
    return text


# `make test-cluster-walk`: the rest of the walk, ~20 min on 2 busy cores (each engine start
# is 1-3 min there). The text evaluate above (`make test-cluster`) shows the old code's failure.
@pytest.mark.cluster_walk
@pytest.mark.timeout(1800)
def test_a_tiny_vlm_loads_its_processor_on_the_worker(
    cluster: RayCluster, s3: S3Server, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Qwen2-VL's processor and template: the prepare-multimodal stage loads the source too."""
    vlm = build_qwen2_vl(tmp_path_factory.mktemp("walk-vlm"))
    _evaluate(cluster, s3, tmp_path / "walk.log", str(vlm), "text,dotted,full")


@pytest.mark.cluster_walk
@pytest.mark.timeout(1800)
def test_the_real_model_by_its_config_name(
    cluster: RayCluster, s3: S3Server, tmp_path: Path
) -> None:
    """SmolLM2 from models/ (hidden on the worker), found through its config."""
    _evaluate(cluster, s3, tmp_path / "walk.log", "smollm2-135m-instruct", "text")


@pytest.mark.cluster_walk
@pytest.mark.timeout(1800)
def test_a_geobuild_round_on_the_resident_engine(
    cluster: RayCluster, s3: S3Server, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "walk.log"
    geobuild = _geosee(cluster, "geobuild", "--dataset", str(SHARED / "geobuildbench"),
                       "--engine", "vllm", "--model", str(tiny_llm_dir), "--first", "2",
                       "--max-rounds", "1", "--max-tokens", "64",
                       "--out", s3.uri("walk/geobuild"), log=log)  # fmt: skip
    assert geobuild.returncode == 0, log.read_text()[-4000:]
    root = model_dir(location(s3.uri("walk/geobuild")), "geobuild", tiny_llm_dir.name)
    assert read_round(root, 1).height == 2


@pytest.mark.cluster_walk
@pytest.mark.timeout(1800)
def test_a_two_model_sweep(cluster: RayCluster, s3: S3Server, tmp_path: Path) -> None:
    """The oracle and tiny-llm (hf engine, built by the sweep on the head: its folder is
    mirrored and the worker's actor fetches and checks it)."""
    log = tmp_path / "walk.log"
    models = {"oracle": 3, "tiny-llm": 1}  # their setups
    sweep = _geosee(cluster, "sweep", "--only", ",".join(models), "--out", s3.uri("walk/sweep"),
                    "--tasks", TASKS, "--per-task", str(PER_TASK), "--max-tokens", "24",
                    "--benchmarks", "noregeo", log=log)  # fmt: skip
    text = log.read_text()
    assert sweep.returncode == 0, text[-4000:]
    root = location(s3.uri("walk/sweep"))
    for name, setups in models.items():
        rows = raw_keys(model_dir(root, "noregeo", name))
        assert len(rows) == 2 * PER_TASK * setups and len(set(rows)) == len(rows), name
    assert (root / MIRRORS / "local").is_dir()  # tiny-llm's folder, copied for the worker
