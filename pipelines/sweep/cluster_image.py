"""The container image a cluster must run, derived from the project's pins.

`pyproject.toml`'s `gpu` extra pins Ray (`ray[data,llm]==X`); that Ray release pins vLLM
(`vllm[audio]==Y` in its `llm` extra, read from the installed Ray's metadata). The image is
Ray's own LLM image for Ray X, built for the Python and CUDA that vLLM Y's wheels need:

- Python: Ray's `docker/ray-llm/Dockerfile` refuses any Python but 3.12 ("ray-llm supports
  Python 3.12 only"), and Ray's CI deprecated the py311/cu128 LLM images (ray-project/ray
  PR #62458); vLLM 0.29.0's wheel is `cp38-abi3`, Requires-Python `>=3.10,<3.15`.
- CUDA: the vLLM wheel's kernels link `libcudart.so.13` (read with `readelf -d` from
  `vllm/_C_stable_libtorch.abi3.so` of `vllm-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl`, as
  `pip download --no-deps vllm==0.29.0` fetches it), and it requires `nvidia-cutlass-dsl[cu13]`;
  Ray tags CUDA 13.0 images `-cu130` (`cu13.0.0-cudnn` in Ray's `ray-images.json`, shortened
  by `_get_platform_tag` in `ci/ray_ci/docker_container.py`).

Tags are `{ray version}-py{major}{minor}-cu{major}{minor}` (Ray's `docker_container.py`).
A vLLM release not in `VLLM_CUDA` is an error here, not a guess: add it after reading its
wheel as above.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
IMAGE_REPO = "rayproject/ray-llm"
RAY_LLM_PYTHON = "3.12"
# vLLM release -> the CUDA its PyPI wheel is built against (see the module docstring).
VLLM_CUDA = {"0.29.0": "13.0"}


def pinned_ray(pyproject: Path = PYPROJECT) -> str:
    """The Ray version the `gpu` extra pins (`ray[...]==X`)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    extra = project.get("optional-dependencies", {}).get("gpu", [])
    found = [m.group(1) for d in extra if (m := re.fullmatch(r"ray\[[a-z,]+\]==([0-9.]+)", d))]
    if len(found) != 1:
        raise ValueError(f"{pyproject}: the gpu extra pins no single ray[...]==X ({extra})")
    return found[0]


def pinned_vllm(ray_version: str) -> str:
    """The vLLM release Ray `ray_version`'s `llm` extra pins, from the installed Ray's metadata
    (which must be that release: Ray's metadata is the authority, not a copy of it)."""
    installed = metadata.version("ray")
    if installed != ray_version:
        raise ValueError(f"installed ray {installed} is not the pinned {ray_version}")
    for requirement in metadata.requires("ray") or []:
        m = re.match(r"vllm(\[[a-z,]+\])?==([0-9.]+)\s*;\s*extra\s*==\s*['\"]llm['\"]", requirement)
        if m:
            return m.group(2)
    raise ValueError(f"ray {installed}'s metadata pins no vllm in its llm extra")


def expected_image(pyproject: Path = PYPROJECT) -> str:
    """`rayproject/ray-llm:<ray>-py312-cu<cuda>` for the pinned Ray and the vLLM it pins."""
    ray_version = pinned_ray(pyproject)
    vllm = pinned_vllm(ray_version)
    if vllm not in VLLM_CUDA:
        raise ValueError(
            f"vLLM {vllm} (pinned by ray {ray_version}) has no known CUDA build in "
            f"pipelines/sweep/cluster_image.py VLLM_CUDA; read its wheel and add it"
        )
    cuda = VLLM_CUDA[vllm].replace(".", "")
    return f"{IMAGE_REPO}:{ray_version}-py{RAY_LLM_PYTHON.replace('.', '')}-cu{cuda}"


def image_mismatch(config: dict[str, Any], source: str) -> str | None:
    """Why a cluster-launcher config's docker image is not the pinned one (None: it is)."""
    image = (config.get("docker") or {}).get("image")
    want = expected_image()
    if image != want:
        return (
            f"{source}: docker.image is {image!r}, the pins need {want!r} (Ray's LLM image "
            f"for the pinned Ray, Python and CUDA of the vLLM wheels it pins)"
        )
    return None


def profile_problems(report: dict[str, Any]) -> list[str]:
    """What is wrong with a `pip install --dry-run --report` of the `gpu` profile: it must
    install the pinned Ray and vLLM, a torch without a local build tag (PyPI's CUDA build,
    not a `+cpu` wheel), and the CUDA runtime of the image (`nvidia-cuda-runtime` 13.x)."""
    versions = {
        str(item["metadata"]["name"]).lower(): str(item["metadata"]["version"])
        for item in report.get("install", [])
    }
    ray_version = pinned_ray()
    vllm = pinned_vllm(ray_version)
    cuda_major = VLLM_CUDA.get(vllm, "?").split(".")[0]
    problems = []
    for name, want in (("ray", ray_version), ("vllm", vllm)):
        if versions.get(name) != want:
            problems.append(f"{name} resolves to {versions.get(name)}, the pins say {want}")
    torch = versions.get("torch")
    if torch is None or "+" in torch:
        problems.append(f"torch resolves to {torch}: not PyPI's CUDA build")
    runtime = versions.get("nvidia-cuda-runtime") or versions.get(
        f"nvidia-cuda-runtime-cu{cuda_major}"
    )
    if runtime is None or not runtime.startswith(f"{cuda_major}."):
        problems.append(
            f"nvidia-cuda-runtime resolves to {runtime}; the image has CUDA {cuda_major}"
        )
    return problems


def main(argv: list[str]) -> int:
    """`python -m pipelines.sweep.cluster_image REPORT.json`: check a resolved gpu profile."""
    import json
    import sys

    report = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    problems = profile_problems(report)
    for problem in problems:
        print(f"gpu profile: {problem}", file=sys.stderr)
    if not problems:
        print(f"gpu profile resolves for {expected_image()} ({len(report['install'])} packages)")
    return 1 if problems else 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
