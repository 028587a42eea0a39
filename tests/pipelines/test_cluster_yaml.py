"""cluster.yaml passes Ray's own cluster-launcher validation and asks for what the sweep needs."""

from __future__ import annotations

import copy
import re
import subprocess
import tomllib
from pathlib import Path

import yaml

from tests.conftest import REPO


def test_ray_autoscaler_accepts_cluster_yaml() -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    prepared = prepare_config(copy.deepcopy(raw))
    validate_config(prepared)  # raises on a schema error
    head = prepared["available_node_types"][prepared["head_node_type"]]
    assert head["resources"].get("GPU", 0) == 0
    workers = [t for n, t in prepared["available_node_types"].items() if n != "head"]
    assert any(t["resources"].get("GPU") == 8 and t["min_workers"] == 0 for t in workers)
    assert "/home/ubuntu/geosee" in prepared["file_mounts"]


def _pinned_ray() -> str:
    """The Ray version the gpu profile pins in pyproject.toml."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = [
        re.fullmatch(r"ray\[[a-z,]+\]==([0-9.]+)", d)
        for d in project["optional-dependencies"]["gpu"]
    ]
    versions = [m.group(1) for m in pins if m]
    assert len(versions) == 1, project["optional-dependencies"]["gpu"]
    return versions[0]


def test_docker_image_is_rays_llm_image_for_the_pinned_ray() -> None:
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    image = raw["docker"]["image"]
    assert image.startswith(f"rayproject/ray-llm:{_pinned_ray()}-py311-"), image
    # The image brings Ray, vLLM and torch: setup adds the project with those pinned.
    setup = " ".join(raw["setup_commands"])
    assert "-c /tmp/image-pins.txt -e ." in setup
    assert "ray[" not in setup and "vllm" not in setup


def test_start_commands_restart_cleanly_as_rays_examples() -> None:
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):
        commands = raw[key]
        assert commands[0] == "ray stop", key
        assert commands[-1].startswith("ulimit -n 65536; ray start"), key


def test_without_an_efs_id_node_setup_mounts_nothing_and_points_to_s3(tmp_path: Path) -> None:
    """Results go to S3 by default: the EFS step must not fail, nor run anything, when no
    EFS_ID is set; with one, it mounts that file system at /mnt/shared."""
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    (mount,) = raw["initialization_commands"]
    calls = tmp_path / "calls"
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("sudo", "mountpoint"):  # record, never run: this is not the cluster host
        (fake / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexit 1\n')
        (fake / tool).chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin"}
    result = subprocess.run(["bash", "-c", mount], env=env, capture_output=True, text=True)
    assert result.returncode == 0 and "s3://" in result.stderr
    assert not calls.exists()
    with_efs = mount.replace("EFS_ID=;", "EFS_ID=fs-0123;", 1)
    assert with_efs != mount
    subprocess.run(["bash", "-c", with_efs], env=env, capture_output=True, text=True)
    made = calls.read_text()
    assert "sudo mount -t nfs4" in made and "fs-0123.efs.us-east-1.amazonaws.com:/" in made
    assert "-v /mnt/shared:/mnt/shared" in raw["docker"]["run_options"]


def test_gpu_workers_get_an_instance_profile_for_s3() -> None:
    """Shard writers run on the GPU workers; Ray gives only the head a profile by itself."""
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    for name, node in raw["available_node_types"].items():
        if name != raw["head_node_type"]:
            assert node["node_config"]["IamInstanceProfile"], name


def test_validator_rejects_a_broken_copy() -> None:
    import jsonschema
    import pytest
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    raw["available_node_types"]["a100x8"]["max_workers"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(raw))
