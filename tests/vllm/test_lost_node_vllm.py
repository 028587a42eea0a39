"""The vLLM engine's node lost mid-run (issue 51 items 2 and 6), on vLLM's CPU build: a
GeoBuild round on the resident engine host (pipelines/engines/stages/vllm_resident.py) and
an `evaluate --engine vllm` (Ray's processor in a Ray Data pool), each on a cluster of two
GPU workers (logical GPUs) that share no disk with the head, results and the model's mirror
in an S3 server on loopback. The runs count vLLM's answers at the source
(tests/pipelines/vllm_count_scenario.py, into a folder both workers see) and hang the last
row of one engine batch once an answer is made: the engine is then inside a batch (for
GeoBuild, inside `EngineHost.run`) with answers made and not yet returned. Once those are
in the request cache, the raylet of the worker running the engine is killed; the engine
starts again on the other worker, the batch is sent again there, and the run ends with
every row once and each answer made once over both workers (on the code before the vllm
request cache, the batch's answered rows were made again). An engine load is 1-3 min here,
two per case: `make test-cluster-walk`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from store.records import model_dir
from store.request_cache import CACHE_FOLDER, read_cache
from store.storage import Location, location
from tests.conftest import REPO, SHARED
from tests.pipelines.lost_node import engine_errors, geosee, hosting, kill_node, wait_for
from tests.pipelines.raw_shards import raw_keys
from tests.pipelines.ray_nodes import Node, RayCluster, ray_cluster
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

# The run ends (done, or its one line) within this long of the loss: on the code before,
# an engine that nothing could host waited for ever.
AFTER_LOSS_S = 900
pytestmark = [pytest.mark.cluster_walk, pytest.mark.timeout(2400)]

PROBLEMS = 8  # GeoBuild: 4 engine batches of 2
TASKS = "C-BCT-CT,U-PAP-PT"
PER_TASK = 5  # evaluate: 10 text rows, 5 batches of 2
# The engine's actor by its process title: GeoBuild's resident host, evaluate's pool actor
# (Ray's engine UDF; ours with the request cache; the count scenario's around either).
TITLES = {
    "geobuild": ("EngineHost",),
    "evaluate": tuple(
        f"MapWorker(MapBatches({name}"
        for name in ("vLLMEngineStageUDF", "CachedEngineUDF", "CountingEngine")
    ),
}
STOP_AFTER = 1  # answers made before one batch's last row hangs (the scenario's argument)


@pytest.fixture
def nodes(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Iterator[RayCluster]:
    """Two workers of 3 CPUs and a logical GPU each, hiding the head's folders; the head has
    no CPU (the driver only)."""
    from huggingface_hub import constants

    built = str(Path(tempfile.gettempdir()) / "geosee-models")
    hidden = (str(tmp_path_factory.getbasetemp()), str(Path(constants.HF_HOME)),
              str(REPO / "models"), built)  # fmt: skip
    workers = [Node(ip, cpus=3, gpus=1, hidden=hidden) for ip in ("127.0.0.2", "127.0.0.3")]
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    with ray_cluster(logs, head_cpus=0, workers=workers) as cluster:
        yield cluster


def _command(kind: str, model: Path, s3: S3Server, prefix: str) -> list[str]:
    out = s3.uri(f"{prefix}/results")
    if kind == "geobuild":
        return ["geobuild", "--dataset", str(SHARED / "geobuildbench"), "--engine", "vllm",
                "--model", str(model), "--first", str(PROBLEMS), "--max-rounds", "1",
                "--max-tokens", "32", "--batch-size", "2", "--shard-rows", "2",
                "--out", out]  # fmt: skip
    return ["evaluate", "--items", s3.uri(f"{prefix}/items"), "--engine", "vllm",
            "--model", str(model), "--tasks", TASKS, "--setups", "text", "--max-tokens", "24",
            "--batch-size", "2", "--shard-rows", "2", "--out", out]  # fmt: skip


def _folder(kind: str, out: Location, model: Path) -> Location:
    return model_dir(out, kind if kind == "geobuild" else "noregeo", model.name)


def _keys(kind: str, out: Location, model: Path) -> list[str]:
    folder = _folder(kind, out, model)
    return raw_keys(folder) if folder.is_dir() else []


def _made(counts: Path) -> int:
    """Answers vLLM made, on either worker (the count scenario's lines)."""
    return len(counts.read_text().splitlines()) if counts.exists() else 0


def _kept(kind: str, out: Location, model: Path) -> int:
    return len(read_cache(_folder(kind, out, model) / CACHE_FOLDER))


@pytest.fixture
def counts() -> Iterator[Path]:
    """Where the count scenario writes: a folder of the machine's /tmp outside the pytest
    root, which both workers see (they hide the pytest root)."""
    folder = Path(tempfile.mkdtemp(prefix="lost-vllm-counts-"))
    yield folder / "answers"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("kind", ["geobuild", "evaluate"])
def test_the_vllm_engine_survives_the_loss_of_its_node(
    nodes: RayCluster, s3: S3Server, tiny_llm_dir: Path, tmp_path: Path, counts: Path, kind: str
) -> None:
    prefix = f"lost-vllm/{kind}-{tmp_path.name}"
    if kind == "evaluate":
        gen = subprocess.run(
            [sys.executable, "-m", "pipelines", "generate", "--out", s3.uri(f"{prefix}/items"),
             "--per-task", str(PER_TASK), "--tasks", TASKS, "--setups", "text"],
            cwd=REPO, env={**nodes.env, "RAY_ADDRESS": nodes.address}, capture_output=True,
            text=True, timeout=900,
        )  # fmt: skip
        assert gen.returncode == 0, gen.stdout[-2000:] + gen.stderr[-2000:]
    want = PROBLEMS if kind == "geobuild" else 2 * PER_TASK
    out = location(s3.uri(f"{prefix}/results"))
    log = tmp_path / f"{kind}.log"
    started = time.monotonic()
    stopped = Path(f"{counts}.stopped")

    def inside_a_batch() -> bool:
        """The engine hangs in a batch, and every answer it made is in the cache."""
        made = _made(counts)
        return stopped.exists() and made >= STOP_AFTER and _kept(kind, out, tiny_llm_dir) >= made

    scenario = [str(counts), str(STOP_AFTER), *_command(kind, tiny_llm_dir, s3, prefix)]
    run = geosee(nodes, scenario, log, module="tests.pipelines.vllm_count_scenario")
    try:
        wait_for("the engine inside a batch", lambda: hosting(nodes, TITLES[kind]) and
                 inside_a_batch(), run, log, limit_s=1500)  # fmt: skip
        (lost,) = hosting(nodes, TITLES[kind])
        rows_at_loss = len(_keys(kind, out, tiny_llm_dir))
        made_at_loss = _made(counts)
        kill_node(nodes, lost)
        seen: set[int] = set()
        lost_at = time.monotonic()
        ends = lost_at + AFTER_LOSS_S
        while run.poll() is None:
            assert time.monotonic() < ends, f"the run went on {AFTER_LOSS_S} s after the loss"
            seen.update(hosting(nodes, TITLES[kind]))
            time.sleep(0.5)
        print(f"{kind}: the run ended {time.monotonic() - lost_at:.0f} s after the loss")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    text = log.read_text()
    made = _made(counts)
    print(f"{kind}: worker {lost} lost with {rows_at_loss} of {want} rows on disk and "
          f"{made_at_loss} answers made; engine seen after on {sorted(seen)}; {made} answers "
          f"made in all; {time.monotonic() - started:.0f} s")  # fmt: skip
    print(text[-3000:])
    assert run.returncode == 0, text[-4000:]
    assert rows_at_loss < want  # the loss came before the end
    assert 1 - lost in seen, "the engine did not start on the other worker"
    keys = _keys(kind, out, tiny_llm_dir)
    assert len(keys) == len(set(keys)), f"{len(keys) - len(set(keys))} row(s) written twice"
    assert len(keys) == want, f"{want - len(keys)} row(s) lost"
    again = [k for k, n in Counter(counts.read_text().splitlines()).items() if n > 1]
    assert made == want, f"{made} answers made for {want} rows; made again: {again}"
    # Answered by the engine, not written as the lost host's errors.
    folder = model_dir(out, kind if kind == "geobuild" else "noregeo", tiny_llm_dir.name)
    assert engine_errors(folder) == []
