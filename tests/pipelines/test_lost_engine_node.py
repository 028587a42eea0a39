"""GeoBuild survives the loss of its engine's node (issue 51, items 2 and 4).

A head with no CPU and worker nodes that share no disk with it (tests/pipelines/ray_nodes.py:
the tiny model's folder, the Hugging Face home and the head's temp folders are hidden), the
results and the model's mirror in an S3 server on loopback (moto). A GeoBuild round of the
tiny LM on the hf engine, whose engine lives in a resident host actor for the whole run
(pipelines/engines/stages/hf_resident.py; the vLLM host is built the same way,
resident_hosts), runs until its first rows are written; then the node hosting the engine is

- killed (SIGKILL of its raylet: the machine gone), or
- drained as the autoscaler drains a reclaimed spot node (Ray's DrainNode, reason
  preemption, with a deadline of one second, shorter than a batch), and killed at the
  deadline.

The host starts again on the other GPU worker (fetching the mirror there) and the round ends
with every problem's row once: none lost, none twice, counted in the raw shards. With no
other GPU worker, the run ends in one line naming the lost node and the model, exit 1; a new
node joins (as the autoscaler's would) and the same command completes the round.

Minutes each (two or three Ray nodes on two busy cores): `make test-cluster-walk`.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from store.records import model_dir
from store.storage import Location, location
from tests.conftest import REPO, SHARED
from tests.pipelines.lost_node import (
    drain,
    engine_errors,
    geosee,
    hosting,
    kill_node,
    placement_groups,
    wait_for,
    weight_downloads,
)
from tests.pipelines.raw_shards import raw_keys
from tests.pipelines.ray_nodes import Node, RayCluster, ray_cluster
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

# The run ends (done, or its one line) within this long of the loss: on the code before,
# an engine that nothing could host waited for ever.
AFTER_LOSS_S = 900
pytestmark = [pytest.mark.cluster_walk, pytest.mark.timeout(1800)]

PROBLEMS = 12  # 6 engine batches of 2: the loss lands with most of them to come
# The hf engine's actor by its process title: the resident host, or (the code before it)
# Ray Data's pool actor.
HOST = ("HFHost", "MapWorker(MapBatches(HFEngine))")
NO_HOST_WAIT_S = "10"  # GEOSEE_GPU_WAIT_S of the run that loses its only GPU node


def _hidden(base: Path) -> tuple[str, ...]:
    """The head's folders no worker sees: the pytest temp root (the tiny model), the Hugging
    Face home, the real model's folder and the sweep's built models."""
    from huggingface_hub import constants

    built = str(Path(tempfile.gettempdir()) / "geosee-models")
    return (str(base), str(Path(constants.HF_HOME)), str(REPO / "models"), built)


@pytest.fixture
def nodes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> Iterator[RayCluster]:
    """Worker 0 (127.0.0.2) with a GPU, and worker 1 (127.0.0.3) with as many GPUs as the
    test's indirect parameter says (default 1); 2 CPUs each, the head none (the driver)."""
    hidden = _hidden(tmp_path_factory.getbasetemp())
    second_gpus = getattr(request, "param", 1)
    workers = [
        Node("127.0.0.2", cpus=2, gpus=1, hidden=hidden),
        Node("127.0.0.3", cpus=2, gpus=second_gpus, hidden=hidden),
    ]
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    with ray_cluster(logs, head_cpus=0, workers=workers) as cluster:
        yield cluster


def _args(model: Path, out: str) -> list[str]:
    return ["geobuild", "--dataset", str(SHARED / "geobuildbench"), "--engine", "hf",
            "--model", str(model), "--first", str(PROBLEMS), "--max-rounds", "1",
            "--max-tokens", "48", "--batch-size", "2", "--shard-rows", "2",
            "--out", out]  # fmt: skip


def _round_keys(out: Location, model: Path) -> list[str]:
    folder = model_dir(out, "geobuild", model.name) / "round=1"
    return raw_keys(folder) if folder.is_dir() else []


def _lose_engine_node_mid_round(
    cluster: RayCluster,
    model: Path,
    uri: str,
    log: Path,
    how: str,
    env: dict[str, str],
    at_loss: Callable[[], None] = lambda: None,
) -> tuple[int, int, int, set[int]]:
    """Start the round, lose the engine's node once rows are on disk (calling `at_loss`
    just before); (exit code, the lost worker's index, rows on disk at the loss, workers
    seen hosting the engine after it)."""
    out = location(uri)
    run = geosee(cluster, _args(model, uri), log, env)
    try:
        wait_for("a round row and the engine's host", lambda: hosting(cluster, HOST) and
                 _round_keys(out, model), run, log)  # fmt: skip
        (lost,) = hosting(cluster, HOST)
        rows_at_loss = len(_round_keys(out, model))
        at_loss()
        if how == "drain":
            drained = drain(cluster, lost, deadline_s=1)
            assert drained.returncode == 0, drained.stdout + drained.stderr
            time.sleep(1)  # the deadline: the cloud takes the instance back
        kill_node(cluster, lost)
        seen: set[int] = set()
        lost_at = time.monotonic()
        ends = lost_at + AFTER_LOSS_S
        while run.poll() is None:
            assert time.monotonic() < ends, f"the run went on {AFTER_LOSS_S} s after the loss"
            seen.update(hosting(cluster, HOST))
            time.sleep(0.5)
        print(f"{how}: the run ended {time.monotonic() - lost_at:.0f} s after the loss")
        return run.returncode, lost, rows_at_loss, seen
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def _assert_every_row_once(out: Location, model: Path) -> None:
    keys = _round_keys(out, model)
    assert len(keys) == len(set(keys)), f"{len(keys) - len(set(keys))} row(s) written twice"
    assert len(keys) == PROBLEMS, f"{PROBLEMS - len(keys)} row(s) lost"
    # Answered by the engine, not written as the lost host's errors.
    assert engine_errors(model_dir(out, "geobuild", model.name) / "round=1") == []


@pytest.mark.parametrize("how", ["kill", "drain"])
def test_a_round_survives_the_loss_of_its_engine_node(
    nodes: RayCluster, s3: S3Server, tiny_llm_dir: Path, tmp_path: Path, how: str
) -> None:
    uri = s3.uri(f"lost-node/{how}-{tmp_path.name}")
    log = tmp_path / "geobuild.log"
    started = time.monotonic()
    prefix = f"{how}-{tmp_path.name}/.models/"
    first: list[int] = []  # weight GETs when the first host had loaded them

    def count() -> None:
        first.append(weight_downloads(s3.pid, prefix))

    rc, lost, rows_at_loss, seen = _lose_engine_node_mid_round(
        nodes, tiny_llm_dir, uri, log, how, {}, count
    )
    text = log.read_text()
    took = time.monotonic() - started
    print(f"{how}: worker {lost} lost with {rows_at_loss} of {PROBLEMS} rows on disk; "
          f"engine seen after on workers {sorted(seen)}; {took:.0f} s")  # fmt: skip
    print(text[-3000:])
    assert rc == 0, text[-4000:]
    assert rows_at_loss < PROBLEMS  # the loss came before the round's end
    assert 1 - lost in seen, "the engine's host did not start on the other GPU worker"
    _assert_every_row_once(location(uri), tiny_llm_dir)
    # What the loss cost in downloads: the weights fetched once more, by the new node.
    downloads = weight_downloads(s3.pid, prefix)
    print(f"{how}: weight GETs {first[0]} before the loss, {downloads} in all")
    assert first[0] > 0 and downloads == 2 * first[0]
    # The run removed what it placed: no placement group left holding a node's resources.
    assert [s for s in placement_groups(nodes).values() if s != "REMOVED"] == []


@pytest.mark.parametrize("nodes", [0], indirect=True)  # worker 1 has no GPU
def test_no_node_left_for_the_engine_ends_in_one_line_and_the_rerun_completes(
    nodes: RayCluster,
    s3: S3Server,
    tiny_llm_dir: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    uri = s3.uri(f"lost-node/only-gpu-{tmp_path.name}")
    log = tmp_path / "geobuild.log"
    env = {"GEOSEE_GPU_WAIT_S": NO_HOST_WAIT_S}
    rc, lost, rows_at_loss, _ = _lose_engine_node_mid_round(
        nodes, tiny_llm_dir, uri, log, "kill", env
    )
    text = log.read_text()
    print(text[-3000:])
    assert lost == 0  # the only GPU worker
    assert rc == 1, text[-4000:]
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text[-4000:]
    assert re.search(r"engine node 127\.0\.0\.2 of " + re.escape(tiny_llm_dir.name), errors[0])
    assert "Traceback" not in text
    kept = _round_keys(location(uri), tiny_llm_dir)
    assert len(kept) == len(set(kept)) and rows_at_loss <= len(kept) < PROBLEMS

    # A GPU node joins, as the autoscaler's would; the same command completes the round.
    nodes.add_worker(
        Node("127.0.0.4", cpus=2, gpus=1, hidden=_hidden(tmp_path_factory.getbasetemp()))
    )
    rerun_log = tmp_path / "rerun.log"
    rerun = geosee(nodes, _args(tiny_llm_dir, uri), rerun_log, env)
    assert rerun.wait(timeout=900) == 0, rerun_log.read_text()[-4000:]
    _assert_every_row_once(location(uri), tiny_llm_dir)
