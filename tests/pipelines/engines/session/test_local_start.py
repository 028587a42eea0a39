"""A local run starts its own Ray even when a cluster started on this machine has recorded
its address (`ray start`, Ray's test `Cluster`): `ray.init()` without an address joins that
cluster (Ray 2.60: services.get_ray_address_from_environment reads the record), and the
run's local options then fail it ("When connecting to an existing cluster, _system_config
must not be provided": 11 failures in stop 56's rehearsal, where a test's Cluster ran beside
the README walk). Here a real Cluster records itself under a Ray temp folder of the test's
own (tests/ray_tmpdir.py), and `geosee generate` runs with that folder.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.ray_tmpdir import own_ray_tmpdir


def test_a_local_run_beside_a_recorded_cluster_starts_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray.cluster_utils import Cluster

    with own_ray_tmpdir(monkeypatch) as folder:
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
        )
        try:
            assert (Path(folder) / "ray" / "ray_current_cluster").is_file()  # the record
            env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
            done = subprocess.run(
                [str(REPO / ".venv" / "bin" / "geosee"), "generate", "--out",
                 str(tmp_path / "items"), "--per-task", "1", "--tasks", "C-BCT-CT",
                 "--setups", "text"],
                capture_output=True, text=True, env=env, timeout=300,
            )  # fmt: skip
        finally:
            cluster.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "existing cluster" not in done.stderr and "active Ray" not in done.stderr
    assert list((tmp_path / "items").rglob("*.parquet"))
