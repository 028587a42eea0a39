#!/usr/bin/env bash
# Submit the NoReGeo/GeoBuild sweep to the Ray cluster at $RAY_ADDRESS with `ray job submit`.
#   RAY_ADDRESS=http://HEAD:8265 scripts/sweep_submit.sh [extra sweep args...]
# The cluster's nodes run Ray's LLM image with the project installed (cluster.yaml), so the
# job installs nothing: it carries the repository and the commit it was submitted from.
# RUNTIME_ENV adds to the runtime env (e.g. '{"pip": [...]}' on a cluster without the image).
set -euo pipefail
: "${RAY_ADDRESS:?set RAY_ADDRESS to the Ray dashboard address, e.g. http://HEAD:8265}"
RAY="${RAY:-ray}"
PY="${PYTHON:-python3}"
OUT="${SWEEP_OUT:-/mnt/shared/results/sweep-45}"
# .git stays home (excluded below), so the run records get the commit from here; "-dirty"
# marks uncommitted changes, which the commit alone would not reproduce.
COMMIT=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$COMMIT" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  COMMIT="$COMMIT-dirty"
fi
# The working dir travels to the cluster; virtualenvs and results never do.
EXCLUDES='[".venv", ".venv-vllm", "results", "out", ".git", "**/__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"]'
# Only GEOSEE_GIT_COMMIT in env_vars: ensure_ray sets OMP_NUM_THREADS/TOKENIZERS_PARALLELISM,
# and Ray refuses a job runtime env and a driver runtime env that set the same variable.
# No secret ever goes here: Ray writes runtime envs to its logs in plain text.
ENV_JSON=$("$PY" - "${RUNTIME_ENV:-}" "$EXCLUDES" "$COMMIT" <<'PYEOF'
import json, sys
env = json.loads(sys.argv[1] or "{}")
env.setdefault("excludes", json.loads(sys.argv[2]))
if sys.argv[3]:
    env.setdefault("env_vars", {})["GEOSEE_GIT_COMMIT"] = sys.argv[3]
print(json.dumps(env))
PYEOF
)
# JOB_ARGS: extra `ray job submit` options, e.g. "--submission-id sweep-1 --no-wait".
# shellcheck disable=SC2086
exec "$RAY" job submit --address "$RAY_ADDRESS" ${JOB_ARGS:-} --working-dir . --runtime-env-json "$ENV_JSON" \
  -- python -m pipelines sweep --models configs/models --out "$OUT" "$@"
