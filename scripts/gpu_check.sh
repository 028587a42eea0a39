#!/usr/bin/env bash
# The GPU path end to end on one machine with one GPU: installs the gpu profile, then runs
# the smallest text and vision-language model configs through `evaluate --engine vllm` on 50
# items per setup (2 per task x 25 tasks) and prints rows/s and the valid-output rate of each.
#   scripts/gpu_check.sh     # venv in .venv-gpu; items and results under out/gpu-check
# Needs the model hub (or HF_HOME holding both models) and the package index for the install.
# Budget: under 10 minutes on one H100-class GPU, most of it the install and weight downloads.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${GPU_VENV:-.venv-gpu}
OUT=${GPU_CHECK_OUT:-out/gpu-check}
TEXT_MODEL=${TEXT_MODEL:-qwen2.5-3b-instruct}
VISION_MODEL=${VISION_MODEL:-qwen2-vl-2b-instruct}
PER_TASK=2
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} TOKENIZERS_PARALLELISM=false

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader \
  || { echo "gpu_check: no nvidia-smi; this script is for a machine with a GPU" >&2; exit 2; }

test -x "$VENV/bin/python" || python3 -m venv "$VENV"
PY="$VENV/bin/python"
# The gpu profile: ray[data,llm] pins vLLM, which pins torch (pyproject.toml).
"$PY" -m pip install --quiet --upgrade pip
"$PY" -m pip install --quiet -e '.[gpu]'

"$PY" -m pipelines generate --out "$OUT/items" --per-task "$PER_TASK" --item-seed 0
# A fresh results folder per check: a resumed run would count earlier rows in its rows/s.
RESULTS="$OUT/results-$(date -u +%Y%m%dT%H%M%SZ)"

run() {  # run MODEL SETUPS
  local started=$SECONDS
  "$PY" -m pipelines evaluate --items "$OUT/items" --engine vllm --model "$1" --setups "$2" \
    --out "$RESULTS"
  "$PY" - "$RESULTS" "$1" "$((SECONDS - started))" <<'PYEOF'
import sys
from pathlib import Path

import polars as pl

from pipelines.noregeo.summarize import load_results

rows = load_results(Path(sys.argv[1]), model=sys.argv[2])
seconds = max(int(sys.argv[3]), 1)
answered = rows.filter(pl.col("engine_error").is_null())
valid = answered["valid"].mean() if answered.height else 0.0
print(
    f"gpu_check {sys.argv[2]}: {rows.height} rows in {seconds} s (model load included): "
    f"{rows.height / seconds:.2f} rows/s; valid {valid:.1%} of {answered.height} answered; "
    f"engine errors {rows.height - answered.height}"
)
PYEOF
}

run "$TEXT_MODEL" text
run "$VISION_MODEL" dotted,full
