"""cluster.yaml passes Ray's own cluster-launcher validation and asks for what the sweep needs."""

from __future__ import annotations

import copy
import re
import subprocess
import tomllib

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


def test_results_mount_refuses_a_placeholder() -> None:
    """Until the EFS ID is filled in, node setup fails rather than write node-local results."""
    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    (mount,) = raw["initialization_commands"]
    result = subprocess.run(["bash", "-c", mount], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "set EFS_ID" in result.stderr
    assert "-v /mnt/shared:/mnt/shared" in raw["docker"]["run_options"]


def test_validator_rejects_a_broken_copy() -> None:
    import jsonschema
    import pytest
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    raw["available_node_types"]["a100x8"]["max_workers"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(raw))
