#!/usr/bin/env bash
# Submit the NoReGeo/GeoBuild sweep to a Ray cluster with `ray job submit`.
#   SWEEP_BUCKET=my-bucket scripts/sweep_submit.sh [extra sweep args...]
# With RAY_ADDRESS unset, the script opens the dashboard tunnel itself: `ray dashboard
# $CLUSTER_YAML` (default cluster.yaml; an SSH port-forward, as Ray's AWS docs say: Ray's
# default security group opens SSH only, never 8265) in the background, submits to
# http://127.0.0.1:$DASHBOARD_PORT (default 8265), and closes the tunnel when `ray job
# submit` returns. With RAY_ADDRESS set (a tunnel of your own, a head you can reach), it
# submits there.
# The cluster's nodes run Ray's LLM image with the project installed (cluster.yaml), so the
# job installs nothing: it carries the repository and the commit it was submitted from.
# RUNTIME_ENV adds to the runtime env (e.g. '{"pip": [...]}' on a cluster without the image).
#
# Secrets (HF_TOKEN, and each model config's api_key_env such as OPENAI_API_KEY) never travel
# with the job. Measured on Ray 2.60 (tests/pipelines/test_job_submit.py): a value in the
# runtime env's env_vars is written in plain text to the session's logs/runtime_env_agent.log
# and served by `ray job list`, the dashboard's /api/jobs/ and /api/v0/actors?detail=1; the
# entrypoint and metadata of a submission are kept in the job's info and served the same way. So nothing the
# submitter sends can carry a secret. Instead the job's entrypoint, on the head, exports one
# variable per file of CLUSTER_SECRETS_DIR (default ~/.config/geosee/secrets: the file name is
# the variable, its content the value) before it starts the sweep. cluster.yaml copies the
# launcher's ~/.config/geosee/secrets there on every node (file_mounts) and links HF_TOKEN
# to huggingface_hub's token file (~/.cache/huggingface/token), where vLLM and transformers
# on the GPU workers read it. The driver hands API keys to its actors through the object
# store (pipelines/engines/stages/engine_stages.py: http_stage). A secret set in this shell is not sent: the
# script says so, and refuses a RUNTIME_ENV whose env_vars name one.
set -euo pipefail
RAY="${RAY:-ray}"
PY="${PYTHON:-python3}"
# Results go where every node writes and the head resumes from: an S3 prefix by default
# (the nodes' instance profiles grant access, cluster.yaml), or an NFS path every node mounts.
if [ -z "${SWEEP_OUT:-}" ] && [ -z "${SWEEP_BUCKET:-}" ]; then
  echo "sweep_submit: set SWEEP_BUCKET (results to s3://\$SWEEP_BUCKET/geosee/sweep-45) or" \
    "SWEEP_OUT (any s3://, gs://, abfs:// URI, or a path every node mounts)" >&2
  exit 2
fi
OUT="${SWEEP_OUT:-s3://${SWEEP_BUCKET:-}/geosee/sweep-45}"
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
# No secret ever goes here: Ray writes runtime envs to its logs in plain text (see above).
# The secret names: HF_TOKEN and every api_key_env the model configs name.
SECRET_NAMES=$( (echo HF_TOKEN; cat configs/models/*.yaml configs/models/*/*.yaml 2>/dev/null |
  sed -n 's/^api_key_env:[[:space:]]*["'"'"']\{0,1\}\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p') | sort -u)
# A path on the head, so its ~ is expanded there, not here.
# shellcheck disable=SC2088
HEAD_SECRETS='~/.config/geosee/secrets'
CLUSTER_SECRETS_DIR="${CLUSTER_SECRETS_DIR:-$HEAD_SECRETS}"
for name in $SECRET_NAMES; do
  if [ -n "${!name:-}" ]; then
    echo "sweep_submit: \$$name is set here and is not sent; the job exports it from" \
      "$CLUSTER_SECRETS_DIR/$name on the head (cluster.yaml: file_mounts)" >&2
  fi
done
# shellcheck disable=SC2086
ENV_JSON=$("$PY" - "${RUNTIME_ENV:-}" "$EXCLUDES" "$COMMIT" $SECRET_NAMES <<'PYEOF'
import json, sys
env = json.loads(sys.argv[1] or "{}")
leaked = sorted(set(env.get("env_vars", {})) & set(sys.argv[4:]))
if leaked:
    sys.exit(f"sweep_submit: RUNTIME_ENV sets {leaked}: Ray logs runtime envs in plain text; "
             "put secrets in CLUSTER_SECRETS_DIR on the cluster instead")
env.setdefault("excludes", json.loads(sys.argv[2]))
if sys.argv[3]:
    env.setdefault("env_vars", {})["GEOSEE_GIT_COMMIT"] = sys.argv[3]
print(json.dumps(env))
PYEOF
)
# The entrypoint (stored and shown by Ray as written here, so it holds the directory, never
# a value): export each file of the secrets directory whose name is a variable name, then
# exec the sweep. A missing directory exports nothing.
# shellcheck disable=SC2016
LOAD_SECRETS='d=$1; shift; case $d in "~/"*) d=$HOME/${d#"~/"};; esac
for f in "$d"/*; do n=${f##*/}; case $n in [!A-Za-z_]*|*[!A-Za-z0-9_]*) continue;; esac
[ -f "$f" ] && export "$n=$(cat "$f")"; done; exec "$@"'
if [ -z "${RAY_ADDRESS:-}" ]; then
  CLUSTER_YAML="${CLUSTER_YAML:-cluster.yaml}"
  DASHBOARD_PORT="${DASHBOARD_PORT:-8265}"
  if [ ! -f "$CLUSTER_YAML" ]; then
    echo "sweep_submit: no RAY_ADDRESS and no $CLUSTER_YAML to open a dashboard tunnel with;" \
      "set CLUSTER_YAML to your cluster's launcher config, or RAY_ADDRESS" >&2
    exit 2
  fi
  TUNNEL_LOG=$(mktemp "${TMPDIR:-/tmp}/geosee-dashboard-tunnel.XXXXXX")
  "$RAY" dashboard --port "$DASHBOARD_PORT" "$CLUSTER_YAML" >"$TUNNEL_LOG" 2>&1 &
  TUNNEL_PID=$!
  trap 'kill "$TUNNEL_PID" 2>/dev/null || true; rm -f "$TUNNEL_LOG"' EXIT
  echo "sweep_submit: dashboard tunnel: $RAY dashboard --port $DASHBOARD_PORT $CLUSTER_YAML" \
    "(pid $TUNNEL_PID)" >&2
  # Until the forwarded port accepts connections: SSH to a fresh head takes seconds.
  if ! "$PY" - "$DASHBOARD_PORT" "$TUNNEL_PID" "${TUNNEL_WAIT_S:-120}" <<'PYEOF'
import os, socket, sys, time
port, pid, limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + limit
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the tunnel process ended")
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        sys.exit(0)
    except OSError:
        time.sleep(1)
sys.exit(f"no answer on 127.0.0.1:{port} in {limit:g} s")
PYEOF
  then
    echo "sweep_submit: the dashboard tunnel did not open; its output:" >&2
    tail -n 20 "$TUNNEL_LOG" >&2
    exit 1
  fi
  RAY_ADDRESS="http://127.0.0.1:$DASHBOARD_PORT"
fi
# JOB_ARGS: extra `ray job submit` options, e.g. "--submission-id sweep-1 --no-wait".
# Not exec: the EXIT trap closes the tunnel once `ray job submit` returns.
rc=0
# shellcheck disable=SC2086
"$RAY" job submit --address "$RAY_ADDRESS" ${JOB_ARGS:-} --working-dir . --runtime-env-json "$ENV_JSON" \
  -- sh -c "$LOAD_SECRETS" sh "$CLUSTER_SECRETS_DIR" \
  python -m pipelines sweep --models configs/models --out "$OUT" "$@" || rc=$?
exit "$rc"
