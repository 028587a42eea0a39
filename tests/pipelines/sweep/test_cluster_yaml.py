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
    (mount,) = [c for c in raw["initialization_commands"] if "EFS_ID" in c]
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


# lsblk -dpno NAME,MODEL on a p4de.24xlarge: the EBS root volume, then 8 instance-store devices.
P4DE_DISKS = "/dev/nvme0n1 Amazon Elastic Block Store\n" + "".join(
    f"/dev/nvme{i}n1 Amazon EC2 NVMe Instance Storage\n" for i in range(1, 9)
)


def _run_nvme_step(tmp_path: Path, disks: str, mounted: bool = False, fail: str = "") -> tuple:
    """cluster.yaml's NVMe step with recording stand-ins for the host's tools: sudo records
    its command and runs nothing (`blkid` finds no file system; the command named by `fail`
    fails), lsblk prints `disks`, mountpoint answers `mounted`."""
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    (step,) = [c for c in raw["initialization_commands"] if "/mnt/nvme" in c]
    calls = tmp_path / "calls"
    calls.write_text("")
    (tmp_path / "disks").write_text(disks)
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    tools = {
        "sudo": f'echo "sudo $*" >> {calls}; [ "$1" = blkid ] && exit 2; '
        f'[ "$1" = "{fail}" ] && exit 1; exit 0',
        "lsblk": f"cat {tmp_path}/disks",
        "mountpoint": f"exit {0 if mounted else 1}",
        "mdadm": "exit 0",  # present: `command -v mdadm` finds it, so nothing is installed
    }
    for tool, body in tools.items():
        (fake / tool).write_text(f"#!/bin/sh\n{body}\n")
        (fake / tool).chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin"}
    result = subprocess.run(["bash", "-c", step], env=env, capture_output=True, text=True)
    return result, calls.read_text().splitlines()


def test_nvme_step_stripes_the_instance_store_and_leaves_the_root_volume_alone(
    tmp_path: Path,
) -> None:
    result, calls = _run_nvme_step(tmp_path, P4DE_DISKS)
    assert result.returncode == 0, result.stderr
    stores = " ".join(f"/dev/nvme{i}n1" for i in range(1, 9))
    assert f"sudo mdadm --create /dev/md0 --run --level=0 --raid-devices=8 {stores}" in calls
    assert any(c.startswith("sudo mkfs.ext4") and c.endswith(" /dev/md0") for c in calls)
    assert "sudo mount -o noatime /dev/md0 /mnt/nvme" in calls
    assert not any("/dev/nvme0n1" in c for c in calls)  # the EBS root volume
    assert "sudo chmod 1777 /mnt/nvme/hf-hub" in calls
    # The order matters: the folders are made on the mounted array, not under it.
    assert calls.index("sudo mount -o noatime /dev/md0 /mnt/nvme") < calls.index(
        "sudo mkdir -p /mnt/nvme/hf-hub"
    )


def test_nvme_step_uses_one_device_as_it_is(tmp_path: Path) -> None:
    one = "/dev/nvme1n1 Amazon EC2 NVMe Instance Storage\n"
    result, calls = _run_nvme_step(tmp_path, one)
    assert result.returncode == 0, result.stderr
    assert not any("mdadm" in c for c in calls)
    assert "sudo mount -o noatime /dev/nvme1n1 /mnt/nvme" in calls


def test_nvme_step_on_a_node_without_instance_store_keeps_a_folder(tmp_path: Path) -> None:
    """The head (m6i.4xlarge) has no instance store: no array, no mkfs, no mount, but the
    folders the containers bind exist, and the log says where the cache is."""
    result, calls = _run_nvme_step(tmp_path, "/dev/nvme0n1 Amazon Elastic Block Store\n")
    assert result.returncode == 0, result.stderr
    assert "root volume" in result.stderr
    assert not any(w in c for c in calls for w in ("mdadm", "mkfs", "mount "))
    assert "sudo mkdir -p /mnt/nvme/hf-hub" in calls


def test_nvme_step_run_again_changes_nothing_and_a_failed_array_stops_setup(
    tmp_path: Path,
) -> None:
    result, calls = _run_nvme_step(tmp_path, P4DE_DISKS, mounted=True)
    assert result.returncode == 0, result.stderr
    assert not any(w in c for c in calls for w in ("mdadm", "mkfs", "mount "))
    result, calls = _run_nvme_step(tmp_path, P4DE_DISKS, fail="mdadm")
    assert result.returncode != 0
    assert not any(w in c for c in calls for w in ("mkfs", "mount "))


def test_containers_see_the_nvme_cache_and_are_told_where_it_is() -> None:
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    options = raw["docker"]["run_options"]
    assert "-v /mnt/nvme:/mnt/nvme" in options
    assert "-e HF_HUB_CACHE=/mnt/nvme/hf-hub" in options
    # gp3 above its baseline (3000 IOPS, 125 MiB/s) wherever a root volume remains.
    for name, node in raw["available_node_types"].items():
        for mapping in node["node_config"]["BlockDeviceMappings"]:
            ebs = mapping["Ebs"]
            assert ebs["VolumeType"] == "gp3", name
            assert ebs["Throughput"] > 125 and ebs["Iops"] > 3000, name


def _gpu_extra_transformers() -> str:
    """The transformers requirement of pyproject's gpu extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (pin,) = [d for d in project["optional-dependencies"]["gpu"] if d.startswith("transformers")]
    return pin


def test_setup_installs_the_gpu_extras_transformers_pin_over_the_images() -> None:
    """The image's own transformers is left out of the constraints, and the gpu extra's pin
    is installed with the project: the same requirement string as pyproject's."""
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    freeze, install = raw["setup_commands"][:2]
    assert "grep -iv '^transformers=='" in freeze and freeze.endswith("> /tmp/image-pins.txt")
    assert re.findall(r"'(transformers[^']*)'", install) == [_gpu_extra_transformers()]
    assert install.index("-c /tmp/image-pins.txt") < install.index("'transformers")


def test_gpu_worker_setup_stops_when_an_engine_does_not_import(tmp_path: Path) -> None:
    """The guard is the workers' last setup step, after the install, and its exit status
    is the step's: a check that fails (exit 1) fails the step, so Ray stops the node's
    setup; a check that passes lets the setup go on."""
    from ray.autoscaler._private.util import prepare_config

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    (guard,) = raw["worker_setup_commands"]
    assert guard == "cd /home/ubuntu/geosee && python -m pipelines.sweep.engine_imports"
    # Ray's own merge: the workers run the common setup (the install) first, then the guard;
    # the head, which runs no engine, does not run it.
    prepared = prepare_config(copy.deepcopy(raw))
    assert prepared["worker_setup_commands"] == [*raw["setup_commands"], guard]
    assert guard not in prepared["head_setup_commands"]
    fake = tmp_path / "bin"
    fake.mkdir()
    runnable = guard.replace("/home/ubuntu/geosee", str(tmp_path))
    for status in (0, 1):
        (fake / "python").write_text(f'#!/bin/sh\necho "$*" > {tmp_path}/args\nexit {status}\n')
        (fake / "python").chmod(0o755)
        env = {"PATH": f"{fake}:/usr/bin:/bin"}
        result = subprocess.run(["bash", "-c", runnable], env=env, capture_output=True)
        assert result.returncode == status
    assert (tmp_path / "args").read_text().strip() == "-m pipelines.sweep.engine_imports"


def test_every_runnable_vllm_config_has_its_architecture_recorded() -> None:
    """engine_imports checks architectures, which the configs do not name: each runnable
    vLLM config's repo must be in its table (a missing one would be a failure line on every
    GPU node's setup)."""
    from pipelines.engines.models.config_yaml import CONFIG_DIR, load_configs
    from pipelines.sweep.engine_imports import architectures

    used, unknown = architectures(load_configs(CONFIG_DIR))
    assert unknown == []
    assert "LlavaForConditionalGeneration" in used and "Mistral3ForConditionalGeneration" in used
    assert sum(len(v) for v in used.values()) >= 30


def test_the_autoscaler_takes_spot_workers_first_then_on_demand() -> None:
    """Issue 51 item 4: a spot worker type beside the on-demand one, which Ray 2.60's own
    scheduler picks first (equal scores, the greater type name) up to its max_workers, the
    on-demand type after it, within the cluster's max_workers."""
    from functools import partial

    from ray.autoscaler._private.node_provider_availability_tracker import (
        NodeAvailabilitySummary,
    )
    from ray.autoscaler._private.resource_demand_scheduler import (
        _default_utilization_scorer,
        get_nodes_for,
    )
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(yaml.safe_load((REPO / "cluster.yaml").read_text()))
    validate_config(config)
    types = config["available_node_types"]
    market = {n: t["node_config"].get("InstanceMarketOptions", {}) for n, t in types.items()}
    spot = [n for n, m in market.items() if m.get("MarketType") == "spot"]
    assert spot == ["a100x8-spot"]
    on_demand = types["a100x8"]
    assert "InstanceMarketOptions" not in on_demand["node_config"]
    assert types["a100x8-spot"]["resources"] == on_demand["resources"]
    scorer = partial(
        _default_utilization_scorer, node_availability_summary=NodeAvailabilitySummary({})
    )
    head = config["head_node_type"]
    first, _ = get_nodes_for(types, {}, head, config["max_workers"], [{"GPU": 8}], scorer)
    assert first == {"a100x8-spot": 1}
    four, left = get_nodes_for(types, {}, head, config["max_workers"], [{"GPU": 8}] * 4, scorer)
    assert four == {"a100x8-spot": 2, "a100x8": 2} and left == []
