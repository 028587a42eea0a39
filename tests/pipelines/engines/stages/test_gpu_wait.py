"""An engine on an autoscaling cluster waits for its GPUs (saying why, within a limit)
instead of failing at once; on a cluster that can never have them it fails at once; an hf
GPU model never runs on the CPU unasked. Ray's side is stood in for here (the GPUs the
cluster has, what it can grow to, the request); tests/pipelines/sweep/test_autoscaling.py runs
the same path against Ray's own autoscaler."""

from __future__ import annotations

import pytest

import pipelines.engines.stages.gpu_request as gpu_request
import pipelines.engines.stages.gpus as gpus
import pipelines.sweep.capacity as capacity
from pipelines.engines.models.config_yaml import load_configs
from pipelines.sweep.capacity import GPUCapacity
from tests.conftest import REPO


class Requests:
    """What the engine asked the autoscaler for, in order ([] is a withdrawal)."""

    def __init__(self) -> None:
        self.made: list[list[float]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        made = self.made

        class FakeRequest(gpu_request.GPURequest):
            def set(self, gpus: list[float]) -> None:
                if not made or made[-1] != gpus:
                    made.append(list(gpus))

        monkeypatch.setattr(gpu_request, "GPURequest", FakeRequest)


def _qwen3_32b():  # tensor parallel 2
    (cfg,) = [c for c in load_configs(REPO / "configs" / "models") if c.name == "qwen3-32b"]
    return cfg


def _cluster(monkeypatch: pytest.MonkeyPatch, gpus_seen: list[float], can_grow_to: float):
    """The cluster shows `gpus_seen` one after the other (then the last for ever)."""
    seen = list(gpus_seen)
    monkeypatch.setattr(gpus, "cluster_gpus", lambda: seen.pop(0) if len(seen) > 1 else seen[0])
    grow = GPUCapacity(total=can_grow_to, per_node=8, source="autoscaler config")
    monkeypatch.setattr(capacity, "discover", lambda *a, **k: grow)
    monkeypatch.setattr(gpus, "GPU_POLL_S", 0.01)


def test_waits_for_the_autoscaler_then_withdraws_the_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = Requests()
    requests.install(monkeypatch)
    _cluster(monkeypatch, [0, 0, 0, 8], can_grow_to=32)
    monkeypatch.setenv(gpus.GPU_WAIT_ENV, "60")
    gpus.check_gpus(_qwen3_32b(), replicas=2)
    err = capsys.readouterr().err
    assert "qwen3-32b: waiting up to 60 s for 4 GPU(s)" in err and "8 GPU(s) up" in err
    assert requests.made == [[2.0, 2.0], []]  # one bundle per replica, then withdrawn


def test_gives_up_after_the_limit_and_withdraws_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = Requests()
    requests.install(monkeypatch)
    _cluster(monkeypatch, [0], can_grow_to=32)
    monkeypatch.setenv(gpus.GPU_WAIT_ENV, "0.2")
    with pytest.raises(gpus.NoGPUError, match=r"did not appear within 0.2 s"):
        gpus.check_gpus(_qwen3_32b())
    assert requests.made == [[2.0], []]


def test_a_cluster_that_cannot_grow_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = Requests()
    requests.install(monkeypatch)
    _cluster(monkeypatch, [0], can_grow_to=0)
    with pytest.raises(gpus.NoGPUError, match="can grow to 0"):
        gpus.check_gpus(_qwen3_32b())
    assert requests.made == []  # nothing asked of an autoscaler that is not there


def test_hf_on_cuda_without_cuda_fails_instead_of_running_on_the_cpu() -> None:
    from actors.hf_engine import HFEngine

    with pytest.raises(RuntimeError, match="asked to run on cuda, but torch sees no CUDA"):
        HFEngine(model="never-loaded", device="cuda")
