"""The sweep plans GPUs from what an autoscaling cluster can grow to, not what it has at start."""

from __future__ import annotations

from pathlib import Path

import pytest

import pipelines.cli as cli
import pipelines.sweep.capacity as capacity_module
from pipelines.engines.models.config_yaml import load_configs
from pipelines.sweep.capacity import GPUCapacity, discover, from_launcher_config, from_yaml
from pipelines.sweep.plan import Job
from pipelines.sweep.progress_table import waiting_state
from pipelines.sweep.weights import mirror_location
from store.storage import RemotePath
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


def _dry(tmp_path: Path, capsys: pytest.CaptureFixture[str], config: Path, out: str) -> str:
    args = ["sweep", "--out", out, "--dry-run", "--per-task", "1"]
    assert cli.main([*args, "--cluster-config", str(config)]) == 0
    return capsys.readouterr().out


def _weights_rows(text: str) -> dict[str, list[str]]:
    """The weights table's rows by (truncated) model name, split on whitespace."""
    table = text.split("\nweights")[1].split("\nall ")[0].splitlines()[2:]
    return {ln.split()[0]: ln.split() for ln in table}


def test_dry_run_prints_bytes_mirrored_once_and_read_per_node_with_the_mirror(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per GPU model: bytes mirrored once and bytes each node reads (params x dtype bytes,
    recomputed here), their minutes at the stated rates, the hub source at its revision and
    the mirror under the results root (RESULTS/.models/REPO@REVISION/)."""
    from pipelines.sweep.weights import MIRROR_BYTES_PER_S, NODE_READ_BYTES_PER_S

    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
    out = tmp_path / "r"
    text = _dry(tmp_path, capsys, CLUSTER_YAML, str(out))
    assert not out.exists()  # a dry run writes nothing
    gpu = [c for c in load_configs(REPO / "configs" / "models") if c.gpus and not c.blocked]
    rows = _weights_rows(text)
    total = 0.0
    for cfg in gpu:
        assert cfg.params_b, cfg.name
        size = cfg.params_b * 1e9 * (4 if cfg.dtype == "float32" else 2)
        total += size
        _, mirror_gb, mirror_min, node_gb, node_min, source, arrow, mirror = rows[cfg.name[:34]]
        assert float(mirror_gb) == pytest.approx(size / 1e9, abs=0.051), cfg.name
        assert float(node_gb) == pytest.approx(size / 1e9, abs=0.051), cfg.name
        assert float(mirror_min) == pytest.approx(size / MIRROR_BYTES_PER_S / 60, abs=0.051)
        assert float(node_min) == pytest.approx(size / NODE_READ_BYTES_PER_S / 60, abs=0.051)
        hub = f"hf://{cfg.repo}@{cfg.revision}"
        if cfg.layout == "llava-original":  # the checkpoint and its tower, converted
            tower = f"hf://{cfg.vision_tower}@{cfg.vision_tower_revision or 'main'}"
            assert (source, arrow) == (f"{hub}+{tower}", "->"), cfg.name
            assert mirror == f"{out}/.models/{cfg.repo}@{cfg.revision}+llava-hf/"
            continue
        assert (source, arrow) == (hub, "->")
        assert mirror == f"{out}/.models/{cfg.repo}@{cfg.revision}/"
    assert len(rows) == len(gpu)
    converted = sorted(c.name for c in gpu if c.layout == "llava-original")
    assert len(converted) == 4  # G-LLaVA 7B/13B, Math-LLaVA, MultiMath
    (line,) = [t for t in text.splitlines() if t.startswith("converted once to the llava-hf")]
    assert sorted(line.rsplit(": ", 1)[1].split(", ")) == converted
    hours = total / MIRROR_BYTES_PER_S / 3600
    assert f"all {len(gpu)} GPU models: {total / 1e9:.0f} GB mirrored once ({hours:.1f} h)" in text
    # An S3 results root names the bucket's mirror (a dry run would ask S3 for the bucket).
    s3 = RemotePath.parse("s3://my-bucket/geosee/sweep-45")
    assert mirror_location("Qwen/Qwen3-8B", "abc123", s3) == (
        "s3://my-bucket/geosee/sweep-45/.models/Qwen/Qwen3-8B@abc123/"
    )


def test_dry_run_checks_each_gpu_node_types_cache_against_its_largest_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One verdict per GPU node type: the p4de's NVMe instance store (8 x 1000 GB) against
    the sum of the models whose TP fits on the node; a node type without an instance store
    is checked on its root volume; a 2-GPU type counts only the models of TP <= 2."""
    import yaml

    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
    out = str(tmp_path / "r")
    gpu = [c for c in load_configs(REPO / "configs" / "models") if c.gpus and not c.blocked]

    def load(max_tp: int) -> float:
        return sum(c.params_b * 2e9 for c in gpu if c.gpus <= max_tp and c.params_b)

    text = _dry(tmp_path, capsys, CLUSTER_YAML, out)
    verdicts = [ln for ln in text.splitlines() if ln.startswith("node type ")]
    # The spot and the on-demand p4de: one verdict each, the same but for the name.
    assert verdicts == [
        f"node type {name} (p4de.24xlarge, 8 GPUs): model cache 8000 GB on NVMe instance store "
        f"8 x 1000 GB (6400 GB for weights) against its largest load {load(8) / 1e9:.0f} GB "
        f"({len(gpu)} models with TP <= 8): holds them all"
        for name in ("a100x8", "a100x8-spot")
    ]
    raw = yaml.safe_load(CLUSTER_YAML.read_text())
    a100 = raw["available_node_types"]["a100x8"]
    a100["node_config"]["InstanceType"] = "p4x.unknown"  # no instance store on record
    ebs = a100["node_config"]["BlockDeviceMappings"][0]["Ebs"]
    small = dict(a100, resources={"CPU": 48, "GPU": 2})
    raw["available_node_types"]["small"] = small
    for size, verdict_end in ((2000, "holds them all"), (1000, "cannot hold them all"),
                              (100, "too small for")):  # fmt: skip
        ebs["VolumeSize"] = size
        config = tmp_path / f"disk{size}.yaml"
        config.write_text(yaml.safe_dump(raw))
        lines = _dry(tmp_path, capsys, config, out).splitlines()
        by_type = {ln.split()[2]: ln for ln in lines if ln.startswith("node type ")}
        gb = size * 2**30 / 1e9
        assert f"model cache {gb:.0f} GB on root volume" in by_type["a100x8"]
        assert verdict_end in by_type["a100x8"], by_type["a100x8"]
        two = [c for c in gpu if c.gpus <= 2]
        small_load = f"largest load {load(2) / 1e9:.0f} GB ({len(two)} models with TP <= 2)"
        assert small_load in by_type["small"]
    assert load(2) < load(8)  # the 2-GPU type's load leaves the TP-4 models out


def test_a_model_wider_than_every_node_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster whose largest node has 2 GPUs cannot run the TP-4 configs (one engine never
    spans nodes): one line naming them and the node size, exit 2, dry run or not, nothing
    written and no Ray started."""
    import yaml

    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
    raw = yaml.safe_load(CLUSTER_YAML.read_text())
    for kind in ("a100x8", "a100x8-spot"):  # every GPU worker type: on demand and spot
        raw["available_node_types"][kind]["resources"]["GPU"] = 2
    config = tmp_path / "two-gpu.yaml"
    config.write_text(yaml.safe_dump(raw))
    wide = sorted(
        c.name for c in load_configs(REPO / "configs" / "models") if c.gpus > 2 and not c.blocked
    )
    assert wide  # today's TP-4 configs
    out = tmp_path / "r"
    for dry in (["--dry-run"], []):
        args = ["sweep", "--out", str(out), "--per-task", "1", "--cluster-config", str(config)]
        assert cli.main([*args, *dry]) == 2
        captured = capsys.readouterr()
        (line,) = captured.err.splitlines()
        assert line.startswith("error: ") and "has 2 GPUs" in line and str(config) in line
        assert all(f"{name} (tensor_parallel_size 4)" in line for name in wide[:3])
        assert captured.out == ""
        assert not out.exists()
    # --only leaves them out: the rest of the sweep plans as before.
    fits = [c.name for c in load_configs(REPO / "configs" / "models") if c.name == "qwen3-32b"]
    args = ["sweep", "--out", str(out), "--per-task", "1", "--cluster-config", str(config)]
    assert cli.main([*args, "--dry-run", "--only", fits[0]]) == 0


def test_a_deeply_nested_or_huge_cluster_config_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38: PyYAML recursed until a RecursionError traceback (`[[[[...`) and read a
    10 MB file whole; the sweep's cluster config now goes through store.yaml_file."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 5000 + "]" * 5000)
    huge = tmp_path / "huge.yaml"
    huge.write_text("a: " + "x" * (1 << 20) + "\n")
    for bad, says in ((deep, "levels"), (huge, "bytes")):
        args = ["sweep", "--dry-run", "--cluster-config", str(bad), "--out", str(tmp_path / "o")]
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and str(bad) in err and says in err, err
        assert "Traceback" not in err


def test_dry_run_says_whether_the_heads_volume_holds_its_disk_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 51: the head's 200 GiB root held less than the sweep's head disk need (one
    mirror file at a time plus the four LLaVA conversions, one at a time: every converted
    copy and the largest original, each original deleted once converted; both copies of
    all four before): the line recomputed here from the configs, with cluster.yaml's head
    volume and a 200 GiB one."""
    import yaml

    monkeypatch.setitem(cli.COMMANDS, "sweep", ("pipelines.sweep.run", "run the model sweep"))
    gpu = [c for c in load_configs(REPO / "configs" / "models") if c.gpus and not c.blocked]
    streamed = [c.params_b * 2e9 for c in gpu if c.layout != "llava-original" and c.params_b]
    converted = [c.params_b * 2e9 for c in gpu if c.layout == "llava-original"]
    assert len(converted) == 4
    need = max(streamed) + sum(converted) + max(converted)
    raw = yaml.safe_load(CLUSTER_YAML.read_text())
    for size in (raw["available_node_types"]["head"]["node_config"]["BlockDeviceMappings"][0]
                 ["Ebs"]["VolumeSize"], 200):  # fmt: skip
        raw["available_node_types"]["head"]["node_config"]["BlockDeviceMappings"][0]["Ebs"][
            "VolumeSize"
        ] = size
        config = tmp_path / f"head{size}.yaml"
        config.write_text(yaml.safe_dump(raw))
        text = _dry(tmp_path, capsys, config, str(tmp_path / "r"))
        (line,) = [t for t in text.splitlines() if t.startswith("head disk")]
        assert f"at most {need / 1e9:.0f} GB at once" in line, line
        copies = f"their converted copies ({sum(converted) / 1e9:.0f} GB, kept) and the "
        assert f"{copies}largest original ({max(converted) / 1e9:.0f} GB, " in line, line
        volume = size * 2**30
        verdict = "holds it" if need <= volume else "is too small for it"
        assert line.endswith(f"({volume / 1e9:.0f} GB, which also takes Ray's logs and object "
                             f"spilling) {verdict}"), line  # fmt: skip
        assert ("holds it" if size == 200 else "too small") not in line
