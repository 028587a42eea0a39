#!/usr/bin/env bash
# Submit the NoReGeo/GeoBuild sweep to the Ray cluster at $RAY_ADDRESS with `ray job submit`.
#   RAY_ADDRESS=http://HEAD:8265 scripts/sweep_submit.sh [extra sweep args...]
# RUNTIME_ENV overrides the runtime env (e.g. '{}' where the cluster already has the gpu
# profile installed, as cluster.yaml's setup commands do, or in tests).
set -euo pipefail
: "${RAY_ADDRESS:?set RAY_ADDRESS to the Ray dashboard address, e.g. http://HEAD:8265}"
RAY="${RAY:-ray}"
OUT="${SWEEP_OUT:-/mnt/shared/results/sweep-45}"
# No env_vars here: ensure_ray sets OMP_NUM_THREADS/TOKENIZERS_PARALLELISM, and Ray refuses a job
# runtime env and a driver runtime env that set the same variable.
GPU_ENV='{"pip": ["ray[data,llm]==2.60.0"]}'
RUNTIME_ENV="${RUNTIME_ENV:-$GPU_ENV}"
# The working dir travels to the cluster; virtualenvs and results never do.
EXCLUDES='[".venv", "results", "out", ".git", "**/__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"]'
ENV_JSON=$("${PYTHON:-python3}" -c 'import json,sys; e=json.loads(sys.argv[1]); e.setdefault("excludes", json.loads(sys.argv[2])); print(json.dumps(e))' "$RUNTIME_ENV" "$EXCLUDES")
# JOB_ARGS: extra `ray job submit` options, e.g. "--submission-id sweep-1 --no-wait".
# shellcheck disable=SC2086
exec "$RAY" job submit --address "$RAY_ADDRESS" ${JOB_ARGS:-} --working-dir . --runtime-env-json "$ENV_JSON" \
  -- python -m pipelines sweep --models configs/models --out "$OUT" "$@"
