"""cluster.yaml passes Ray's own cluster-launcher validation and asks for what the sweep needs."""

from __future__ import annotations

import copy

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
    assert any(".[gpu]" in cmd for cmd in prepared["setup_commands"])
    assert "/home/ubuntu/geosee" in prepared["file_mounts"]


def test_validator_rejects_a_broken_copy() -> None:
    import jsonschema
    import pytest
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((REPO / "cluster.yaml").read_text())
    raw["available_node_types"]["a100x8"]["max_workers"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(raw))
