"""A results store that the driver can write but one of the cluster's nodes cannot is refused
before the run starts (issue 51, "bad input"): one line naming the node and the store,
exit 2, nothing under the results.

The condition is the real one, recreated with moto's IAM-like access control
(tests/pipelines/s3_access.py): the head (where the driver joins) and the first worker hold
the credentials of a user allowed s3:*, a second worker those of a user allowed only
s3:GetObject and s3:ListBucket, as a node whose instance profile lacks write access; moto
answers that node's writes 403 AccessDenied, as S3 does. Before the check the run went on
(the oracle's shards are the driver's to write; an engine's request cache would only have
warned once that its answers were not kept).

One cluster, two runs: with a head and a worker that can write, `evaluate` passes the
check and completes (exit 0) leaving no probe behind; then the read-only node joins (as the
autoscaler would add one) and the same command into a fresh prefix is refused. About 2-3
min on two busy cores (the Ray nodes' start): `make test-cluster-walk`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from pipelines.engines.stages.node_reach import PROBE_PREFIX
from store.records import model_dir
from store.shards import shard_files
from store.storage import location
from tests.conftest import REPO
from tests.pipelines.ray_nodes import Node, RayCluster, ray_cluster
from tests.pipelines.s3_access import Principal, writer_and_reader
from tests.pipelines.s3_server import S3Server, _environment, s3_server

pytestmark = [pytest.mark.cluster_walk, pytest.mark.timeout(1200)]

TASK = "N-ECL-SLT"
WRITER_IP = "127.0.0.2"
READER_IP = "127.0.0.3"
RUN_S = 600  # one command on the cluster, Ray's connection and start-up included


@pytest.fixture
def store() -> Iterator[tuple[S3Server, Principal, Principal]]:
    """moto with access control; the writer's credentials in this process's environment,
    so the head and every node started without others hold them (ray_nodes.ray_env)."""
    with s3_server() as server:
        writer, reader = writer_and_reader(server)
        with _environment({**server.env, **writer.env()}):
            yield server, writer, reader


def _geosee(cluster: RayCluster, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`python -m pipelines ARGS` as a driver of the cluster (stdout and stderr apart)."""
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *args], cwd=REPO,
        env={**cluster.env, "RAY_ADDRESS": cluster.address},
        capture_output=True, text=True, timeout=RUN_S,
    )  # fmt: skip


def _evaluate(items: Path, out: str) -> list[str]:
    return ["evaluate", "--items", str(items), "--engine", "oracle", "--model", "oracle",
            "--setups", "text", "--batch-size", "2", "--shard-rows", "2", "--out", out]  # fmt: skip


def _under(server: S3Server, who: Principal, prefix: str) -> dict[str, pafs.FileType]:
    """Every path under `prefix` in the bucket and its type: objects are files, pyarrow's
    empty folder markers (and the folders objects imply) directories."""
    fs = pafs.S3FileSystem(access_key=who.key_id, secret_key=who.secret, region="us-east-1",
                           scheme="http", endpoint_override=server.endpoint)  # fmt: skip
    selector = pafs.FileSelector(server.path(prefix), allow_not_found=True, recursive=True)
    return {info.path: info.type for info in fs.get_file_info(selector)}


def test_a_node_that_cannot_write_the_store_refuses_the_run_before_anything_is_written(
    store: tuple[S3Server, Principal, Principal], tmp_path: Path
) -> None:
    server, writer, reader = store
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    with ray_cluster(logs, head_cpus=1, workers=[Node(WRITER_IP, cpus=2)]) as cluster:
        items = tmp_path / "items"  # on the shared disk: no worker here hides it
        generate = ["generate", "--out", str(items), "--tasks", TASK, "--per-task", "2",
                    "--setups", "text", "--image-size", "64"]  # fmt: skip
        made = _geosee(cluster, generate)
        assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-3000:]

        passed = _geosee(cluster, _evaluate(items, server.uri("writable")))
        assert passed.returncode == 0, passed.stdout[-2000:] + passed.stderr[-3000:]
        assert shard_files(model_dir(location(server.uri("writable")), "noregeo", "oracle"))
        assert not [p for p in _under(server, writer, "writable") if PROBE_PREFIX in p]

        cluster.add_worker(Node(READER_IP, cpus=1, env=tuple(reader.env().items())))
        refused = _geosee(cluster, _evaluate(items, server.uri("refused")))
    output = refused.stdout + refused.stderr
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error")]
    assert refused.returncode == 2, output[-3000:]
    assert len(errors) == 1 and "Traceback" not in output, output[-3000:]
    line = errors[0]
    assert f"node {READER_IP}: " in line and "Access Denied" in line, line
    assert f"node {WRITER_IP}" not in line and "node 127.0.0.1" not in line, line
    assert f"s3://{server.bucket}/refused (endpoint {server.endpoint})" in line, line
    assert "write access" in line, line
    for secret in (reader.secret, writer.secret, reader.key_id, writer.key_id):
        assert secret not in output
    # No settings, run record, shard, request cache, lock or probe: not one object. The
    # run lock was taken (and removed) before the check, which needs Ray, as every refusal
    # after it is; pyarrow leaves an empty marker of the lock's folder on deleting it.
    left = _under(server, writer, "refused")
    assert [path for path, kind in left.items() if kind != pafs.FileType.Directory] == [], left
    assert not [path for path in left if PROBE_PREFIX in path], left
