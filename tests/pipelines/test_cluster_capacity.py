"""The sweep plans GPUs from what an autoscaling cluster can grow to, not what it has at start."""

from __future__ import annotations

from pathlib import Path

import pytest

import pipelines.cli as cli
import pipelines.sweep.capacity as capacity_module
from pipelines.engines.model_config import load_configs
from pipelines.sweep.capacity import GPUCapacity, discover, from_launcher_config, from_yaml
from pipelines.sweep.plan import Job
from pipelines.sweep.progress_table import waiting_state
from tests.conftest import REPO

CLUSTER_YAML = REPO / "cluster.yaml"


def test_cluster_yaml_can_grow_to_four_nodes_of_eight_gpus() -> None:
    capacity = from_yaml(CLUSTER_YAML)
    assert (capacity.total, capacity.per_node) == (32, 8)


def test_cluster_wide_max_workers_caps_the_gpu_richest_types_first() -> None:
    config = {
        "max_workers": 3,
        "head_node_type": "head",
        "available_node_types": {
            "head": {"resources": {"CPU": 8}},
            "cpu": {"resources": {"CPU": 32}, "max_workers": 10},
            "gpu4": {"resources": {"GPU": 4}, "max_workers": 2},
            "gpu8": {"resources": {"GPU": 8}, "max_workers": 2},
        },
    }
    # Two 8-GPU nodes, then one of the 4-GPU nodes: the cap of 3 workers is reached.
    capacity = from_launcher_config(config, "test")
    assert (capacity.total, capacity.per_node) == (20, 8)


def test_a_model_wider_than_any_node_is_not_run_with_that_reason() -> None:
    capacity = GPUCapacity(total=32, per_node=8, source="cluster.yaml")
    assert capacity.reason_not_runnable(4) is None
    reason = capacity.reason_not_runnable(16)
    assert reason is not None and "tensor parallel 16" in reason and "has 8" in reason
    assert "needs 64 GPU(s)" in str(GPUCapacity(32, None, "--gpus").reason_not_runnable(64))


def test_a_bad_cluster_config_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_bytes(b"\xff\xfe: [")
    with pytest.raises(ValueError, match="cluster.yaml"):
        from_yaml(bad)
    bad.write_text("just: a mapping\n")
    with pytest.raises(ValueError, match="no available_node_types"):
        from_yaml(bad)


def test_sources_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capacity_module, "BOOTSTRAP_CONFIG", tmp_path / "absent.yaml")
    assert discover(3, CLUSTER_YAML, connected=False).source == "--gpus"
    assert discover(None, CLUSTER_YAML, connected=False).total == 32
    # A dry run with no cluster named plans for the GPUs this machine shows.
    monkeypatch.setattr(capacity_module, "gpus_on_this_machine", lambda: 0)
    assert discover(None, None, connected=False).total == 0
    monkeypatch.setattr(capacity_module, "gpus_on_this_machine", lambda: 2)
    assert discover(None, None, connected=False).total == 2
    # On a head node, `ray up` leaves the launcher config in the home directory.
    bootstrap = tmp_path / "ray_bootstrap_config.yaml"
    bootstrap.write_text(CLUSTER_YAML.read_text())
    monkeypatch.setattr(capacity_module, "BOOTSTRAP_CONFIG", bootstrap)
    assert discover(None, None, connected=False).per_node == 8


def test_dry_run_against_the_autoscaling_cluster_plans_every_gpu_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `make sweep-45-models` would plan on cluster.yaml's cluster, which starts with no
    GPU worker: every vLLM model runs, none is "not run" for want of GPUs."""
    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
    args = ["sweep", "--out", str(tmp_path / "r"), "--dry-run", "--per-task", "1"]
    assert cli.main([*args, "--cluster-config", str(CLUSTER_YAML)]) == 0
    text = capsys.readouterr().out
    assert "planning for 32 GPU(s)" in text
    vllm = [c for c in load_configs(REPO / "configs" / "models") if c.engine == "vllm"]
    runnable = [c.name for c in vllm if not c.blocked]
    assert len(runnable) >= 30
    plan = text.split("\nweights")[0]  # the plan table; the weights table follows it
    lines = {ln.split()[0]: ln for ln in plan.splitlines() if ln.strip()}
    for name in runnable:
        assert lines[name[:34]].rstrip().endswith("will run"), lines[name[:34]]
    assert "GPU(s), the cluster" not in text


def test_a_gpu_model_waiting_for_the_autoscaler_shows_pending() -> None:
    (cfg,) = [c for c in load_configs(REPO / "configs" / "models") if c.name == "qwen3-32b"]
    job = Job(cfg=cfg, setups=["text"])
    assert waiting_state(job, "running", 0) == "pending: waiting for 2 GPU(s)"
    assert waiting_state(job, "pending", 1) == "pending: waiting for 2 GPU(s)"
    assert waiting_state(job, "running", 8) == "running"
    assert waiting_state(job, "done", 0) == "done"


def test_dry_run_prints_each_gpu_models_weights_and_checks_the_node_disk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per GPU model: bytes (params x dtype bytes, recomputed here) and the hub source at
    its revision; then cluster.yaml's GPU node disk against the largest model and against
    all of them (a node may cache every model it runs over the sweep)."""
    import yaml

    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))

    def dry(config: Path) -> str:
        args = ["sweep", "--out", str(tmp_path / "r"), "--dry-run", "--per-task", "1"]
        assert cli.main([*args, "--cluster-config", str(config)]) == 0
        return capsys.readouterr().out

    text = dry(CLUSTER_YAML)
    gpu = [c for c in load_configs(REPO / "configs" / "models") if c.gpus and not c.blocked]
    lines = {ln.split()[0]: ln for ln in text.split("\nweights")[1].splitlines()[2:] if ln}
    total = 0.0
    for cfg in gpu:
        assert cfg.params_b, cfg.name
        size = cfg.params_b * (4 if cfg.dtype == "float32" else 2)
        total += size
        fields = lines[cfg.name[:34]].split()
        assert float(fields[1]) == pytest.approx(size, abs=0.051), cfg.name
        assert fields[-1] == f"hf://{cfg.repo}@{cfg.revision}"
    assert f"all {len(gpu)} GPU models: {total:.0f} GB" in text
    assert "node type a100x8: disk" in text and "holds them all" in text
    raw = yaml.safe_load(CLUSTER_YAML.read_text())
    ebs = raw["available_node_types"]["a100x8"]["node_config"]["BlockDeviceMappings"][0]["Ebs"]
    for size, verdict in ((1000, "cannot hold them all"), (100, "too small for")):
        ebs["VolumeSize"] = size
        smaller = tmp_path / f"disk{size}.yaml"
        smaller.write_text(yaml.safe_dump(raw))
        assert verdict in dry(smaller)
