#!/usr/bin/env bash
# Usage: scripts/torchvision_cpu.sh VENV_PYTHON [WHEEL]
#
# Gives a torch 2.13.0+cpu venv (.venv and .venv-vllm) a torchvision it can import: open_clip
# (the probes) imports `torchvision.transforms`; vLLM 0.29's Qwen2-VL and Idefics3 modules and
# the hf engine's image-text models import transformers' image processors, which import
# `torchvision.transforms.v2`. The only torchvision 0.28.0 (the release paired with
# torch 2.13) this machine can reach is PyPI's CUDA build: its `_C.so` links libtorch_cuda,
# libc10_cuda and libcudart, cannot load beside torch+cpu, and `import torchvision` then
# fails at `register_fake("torchvision::nms")` ("operator torchvision::nms does not exist").
# PyTorch's CPU index (0.28.0+cpu) is not reachable from here.
#
# The image transforms vLLM needs are pure Python, so this:
#   1. installs the wheel with --no-deps (its torch requirement would replace torch+cpu);
#   2. deletes `torchvision/_C.so` (the CUDA-linked C++ ops: nms, roi_align, ... unused here);
#   3. makes the two unconditional `register_fake("torchvision::nms"/"qnms")` decorators in
#      `torchvision/_meta_registrations.py` apply only when the C ops loaded
#      (`torchvision.extension._has_ops()`), as the file's other registrations already do.
# Idempotent: a second run finds the wheel installed, `_C.so` gone, the file patched.
set -euo pipefail

py=${1:?usage: $0 VENV_PYTHON [WHEEL]}
wheel=${2:-/opt/pypi-more/files/torchvision-0.28.0-cp311-cp311-manylinux_2_28_x86_64.whl}

if [ "$("$py" -m pip show torchvision 2>/dev/null | sed -n "s/^Version: //p")" != "0.28.0" ]; then
    test -f "$wheel" || { echo "torchvision_cpu.sh: wheel $wheel not found" >&2; exit 2; }
    "$py" -m pip install --quiet --no-deps "$wheel"
fi

site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site/torchvision/_C.so"
"$py" - "$site/torchvision/_meta_registrations.py" <<'EOF'
import sys
from pathlib import Path

path = Path(sys.argv[1])
text = path.read_text()
for op in ("nms", "qnms"):
    plain = f'@torch.library.register_fake("torchvision::{op}")\n'
    guarded = (
        f'@(torch.library.register_fake("torchvision::{op}") '
        "if torchvision.extension._has_ops() else (lambda f: f))\n"
    )
    if guarded not in text:
        if text.count(plain) != 1:
            sys.exit(f"torchvision_cpu.sh: {path}: expected one {plain.strip()!r}")
        text = text.replace(plain, guarded)
path.write_text(text)
EOF
"$py" -c 'import torch, torchvision.transforms.v2; print("torch", torch.__version__, "torchvision", torchvision.__version__)'
