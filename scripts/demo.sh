#!/usr/bin/env bash
# The README's `make demo`, in local mode on a CPU machine: items, baselines through
# `evaluate`, the GeoBuild solver audit, the smoke probe grid, human-evaluation pages, and
# the report. Results go under out/demo/ (DEMO_DIR); every step is resumable or idempotent,
# so running it again redoes only what is missing. Prints the report's index.html at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
DEMO_DIR=${DEMO_DIR:-out/demo}
GEOBUILD_DATA=${GEOBUILD_DATA:-../shared/geobuildbench}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
export TOKENIZERS_PARALLELISM=false RAY_DEDUP_LOGS=0

step_start=$SECONDS
step() {  # step NAME: print the time the previous step took, then this step's name
  echo "== $1 (previous step: $((SECONDS - step_start)) s)"
  step_start=$SECONDS
}

step "generate: 20 items per task, 3 setups"
$PY -m pipelines generate --out "$DEMO_DIR/items" --per-task 20 --item-seed 0

for engine in oracle random constant; do
  step "evaluate: baseline $engine"
  $PY -m pipelines evaluate --items "$DEMO_DIR/items" --engine "$engine" --model "$engine" \
    --out "$DEMO_DIR/results"
done

audit=()
if [ -d "$GEOBUILD_DATA" ]; then
  step "geobuild-solve: constructibility audit of $GEOBUILD_DATA"
  $PY -m pipelines geobuild-solve --dataset "$GEOBUILD_DATA" --out "$DEMO_DIR/solver"
  audit=(--audit "$DEMO_DIR/solver/audit.csv")
else
  step "geobuild-solve: skipped, no GeoBuild data at $GEOBUILD_DATA (set GEOBUILD_DATA)"
fi

step "probe: smoke grid (tiny random ViT; chance-level accuracies by design)"
$PY -m pipelines probe --grid configs/probes/smoke.yaml --out "$DEMO_DIR/results"

step "human-export: dotted items as annotator pages"
rm -rf "$DEMO_DIR/human"
$PY -m pipelines human-export "$DEMO_DIR/items" --out "$DEMO_DIR/human"

step "report"
$PY -m pipelines report "$DEMO_DIR/results" --out "$DEMO_DIR/report" "${audit[@]}"
step "done"
echo "demo wall time: ${SECONDS} s"
echo "report: $(realpath "$DEMO_DIR/report/index.html")"
