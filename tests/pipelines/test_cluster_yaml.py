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


def _makefile_vllm() -> str:
    """The vLLM release the Makefile's CPU profile installs (the one the cluster runs)."""
    text = (REPO / "Makefile").read_text()
    match = re.search(r"^VLLM_VERSION := ([0-9.]+)$", text, re.M)
    assert match, "Makefile: no VLLM_VERSION"
    return match.group(1)


def test_docker_image_is_derived_from_the_pins() -> None:
    """Ray's LLM image for the Ray pyproject pins, for the Python and CUDA of the vLLM that
    Ray pins: Ray builds ray-llm images for Python 3.12 only (its docker/ray-llm/Dockerfile),
    and vLLM 0.29.0's wheel links libcudart.so.13, which Ray tags -cu130."""
    from importlib import metadata

    from pipelines.sweep.cluster_image import VLLM_CUDA, expected_image

    ray_version = _pinned_ray()
    assert metadata.version("ray") == ray_version
    vllm_pins = [r for r in metadata.requires("ray") or [] if r.startswith("vllm")]
    assert any(f"=={_makefile_vllm()}" in r and "llm" in r for r in vllm_pins), vllm_pins
    cuda = VLLM_CUDA[_makefile_vllm()].replace(".", "")
    want = f"rayproject/ray-llm:{ray_version}-py312-cu{cuda}"
    assert expected_image() == want
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    assert raw["docker"]["image"] == want
    # The image brings Ray, vLLM and torch: setup adds the project with those pinned.
    setup = " ".join(raw["setup_commands"])
    assert "-c /tmp/image-pins.txt -e ." in setup
    assert "ray[" not in setup and "vllm" not in setup


def test_an_image_that_does_not_match_the_pins_is_named() -> None:
    from pipelines.sweep.cluster_image import expected_image, image_mismatch

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    assert image_mismatch(raw, "cluster.yaml") is None
    for wrong in ("rayproject/ray-llm:2.60.0-py311-cu128", f"{expected_image()}-extra", None):
        raw["docker"]["image"] = wrong
        reason = image_mismatch(raw, "cluster.yaml")
        assert reason is not None and expected_image() in reason and repr(wrong) in reason


def test_gpu_profile_report_check_wants_the_cuda_tree() -> None:
    """`make check-gpu-profile` checks pip's report with this: a report that resolved this
    machine's torch+cpu wheel, or a CUDA 12 runtime, fails."""
    from pipelines.sweep.cluster_image import pinned_vllm, profile_problems

    ray_version = _pinned_ray()
    vllm = pinned_vllm(ray_version)

    def report(torch: str, runtime: tuple[str, str]) -> dict:
        pins = {"ray": ray_version, "vllm": vllm, "torch": torch, runtime[0]: runtime[1]}
        return {"install": [{"metadata": {"name": n, "version": v}} for n, v in pins.items()]}

    assert profile_problems(report("2.13.0", ("nvidia-cuda-runtime", "13.0.96"))) == []
    (cpu,) = profile_problems(report("2.13.0+cpu", ("nvidia-cuda-runtime", "13.0.96")))
    assert "torch" in cpu
    (old,) = profile_problems(report("2.13.0", ("nvidia-cuda-runtime-cu12", "12.8.90")))
    assert "CUDA 13" in old


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


PASSROLE_STEP = (
    "aws iam put-role-policy --role-name ray-autoscaler-v1 --policy-name "
    "geosee-pass-worker-role --policy-document file://aws/head-passrole-policy.json"
)


def test_gpu_workers_get_an_instance_profile_the_head_may_pass() -> None:
    """Shard writers run on the GPU workers, so they get Ray's instance profile (Ray gives
    only the head one by itself). Launching an instance with a profile needs iam:PassRole on
    its role, which Ray's default head role (EC2 and S3 full access) lacks: the policy file
    grants it for exactly the role Ray puts in that profile, and only towards EC2."""
    import json

    from ray.autoscaler._private.aws.config import (
        DEFAULT_RAY_IAM_ROLE,
        DEFAULT_RAY_INSTANCE_PROFILE,
    )

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    for name, node in raw["available_node_types"].items():
        if name != raw["head_node_type"]:
            assert node["node_config"]["IamInstanceProfile"] == {
                "Name": DEFAULT_RAY_INSTANCE_PROFILE
            }, name
    policy = json.loads((REPO / "aws" / "head-passrole-policy.json").read_text())
    (statement,) = policy["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "iam:PassRole"
    assert statement["Resource"] == f"arn:aws:iam::*:role/{DEFAULT_RAY_IAM_ROLE}"
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    # The step that attaches it, as the user types it, where the user reads it.
    assert PASSROLE_STEP in (REPO / "docs" / "cluster.md").read_text()
    assert f"--role-name {DEFAULT_RAY_IAM_ROLE} " in PASSROLE_STEP


def test_validator_rejects_a_broken_copy() -> None:
    import jsonschema
    import pytest
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    raw["available_node_types"]["a100x8"]["max_workers"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(raw))
