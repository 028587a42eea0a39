"""`ray job submit` end to end: a real local Ray head (own temp dir, free ports, dashboard
for the job server), a small sweep through scripts/sweep_submit.sh, results checked, the
head stopped by the process id this test started."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO
from tests.pipelines.processes import free_ports

VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def ray_head_and_temp() -> Iterator[tuple[str, Path]]:
    """Dashboard address and temp dir (the session folders) of a fresh head; stopped by its
    own process group afterwards."""
    temp = tempfile.mkdtemp(prefix="rh", dir="/tmp")  # short: unix socket paths are limited
    gcs, dash, client, node_mgr, obj_mgr, agent_grpc, agent_http, metrics, rt_env = free_ports(9)
    # Ray 2.60 heads may require a token. A Ray client in this process (another test's
    # ray.init) has already read ~/.ray/auth_token and keeps it: reuse that token if it
    # exists, so the client and this head agree whatever ran before.
    token_file = Path.home() / ".ray" / "auth_token"
    token = token_file.read_text().strip() if token_file.is_file() else secrets.token_hex(16)
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    saved = {k: os.environ.get(k) for k in auth}
    os.environ.update(auth)
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    cmd = [
        str(VENV_BIN / "ray"), "start", "--head", "--block", "--num-cpus", "2", "--num-gpus", "0",
        "--node-ip-address", "127.0.0.1", "--port", str(gcs), "--temp-dir", temp,
        "--include-dashboard", "true", "--dashboard-host", "127.0.0.1",
        "--dashboard-port", str(dash), "--ray-client-server-port", str(client),
        "--node-manager-port", str(node_mgr), "--object-manager-port", str(obj_mgr),
        "--dashboard-agent-grpc-port", str(agent_grpc),
        "--dashboard-agent-listen-port", str(agent_http), "--metrics-export-port", str(metrics),
        "--runtime-env-agent-port", str(rt_env),
    ]  # fmt: skip
    head = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    address = f"http://127.0.0.1:{dash}"
    try:
        from ray.job_submission import JobSubmissionClient

        deadline = time.monotonic() + 120
        while True:
            try:
                JobSubmissionClient(address).list_jobs()
                break
            except Exception:
                if time.monotonic() > deadline or head.poll() is not None:
                    raise
                time.sleep(2)
        yield address, Path(temp)
    finally:
        # The head was started with --block in its own session: SIGTERM to that process group
        # stops exactly the raylet, GCS and workers this fixture started. Its graceful stop
        # was measured at ~30 s of waiting (CI time); what is left after 10 s is killed (the
        # workers end with their raylet).
        if head.poll() is None:
            os.killpg(head.pid, signal.SIGTERM)
            try:
                head.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)
                head.wait()
        shutil.rmtree(temp, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def ray_head(ray_head_and_temp: tuple[str, Path]) -> str:
    return ray_head_and_temp[0]


def submit(
    address: str, out: Path, submission_id: str, *sweep_args: str, extra_env: dict | None = None
) -> subprocess.Popen:
    """Start scripts/sweep_submit.sh without waiting; the runtime env installs nothing."""
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
        "RAY_ADDRESS": address,
        "RUNTIME_ENV": "{}",
        "SWEEP_OUT": str(out),
        "PYTHON": sys.executable,
        "JOB_ARGS": f"--submission-id {submission_id}",
        **(extra_env or {}),
    }
    return subprocess.Popen(
        ["bash", "scripts/sweep_submit.sh", *sweep_args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_job(address: str, submission_id: str, timeout_s: float = 600) -> str:
    from ray.job_submission import JobStatus, JobSubmissionClient

    client = JobSubmissionClient(address)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status = client.get_job_status(submission_id)
        except Exception:  # not registered yet
            time.sleep(1)
            continue
        if status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED):
            if status != JobStatus.SUCCEEDED:
                print(client.get_job_logs(submission_id)[-5000:])
            return str(status.value)
        time.sleep(2)
    raise TimeoutError(f"job {submission_id} did not finish in {timeout_s} s")


@pytest.mark.slow  # about 90 s on two busy cores; still part of `make test`
def test_ray_job_submit_runs_a_small_sweep(ray_head: str, tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = submit(
        ray_head, out, "sweep-small",
        "--only", "oracle,random,tiny-llm", "--tasks", "C-BCT-CT,U-PAP-PT", "--per-task", "2",
        "--progress-interval", "5",
    )  # fmt: skip
    assert wait_job(ray_head, "sweep-small") == "SUCCEEDED"
    log, _ = proc.communicate(timeout=120)
    assert "sweep progress" in log
    df = pl.read_parquet(out / "noregeo" / "**" / "*.parquet", hive_partitioning=False)
    counts = dict(df.group_by("model").len().iter_rows())
    assert counts == {"oracle": 12, "random": 12, "tiny-llm": 4}
    assert df["request_key"].n_unique() == df.height
    assert df.filter(pl.col("model") == "oracle")["correct"].all()
    # .git stays home; the run records still name the commit the job was submitted from.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    records = [json.loads(p.read_text()) for p in out.rglob("runs/*.json")]
    assert records
    assert all(r["git_commit"].removesuffix("-dirty") == head for r in records), records


def secret_files(secrets: dict[str, str], folder: Path) -> dict[str, str]:
    """What `ray up` puts on every node (cluster.yaml: file_mounts): one file per variable."""
    folder.mkdir(mode=0o700)
    for name, value in secrets.items():
        (folder / name).write_text(value + "\n")
        (folder / name).chmod(0o600)
    return {"CLUSTER_SECRETS_DIR": str(folder)}


def holders(secret: str, *roots: Path) -> list[Path]:
    """Files under `roots` whose bytes contain `secret`."""
    found = []
    for root in roots:
        for path in root.rglob("*"):
            try:
                if path.is_file() and secret.encode() in path.read_bytes():
                    found.append(path)
            except OSError:  # a socket, or gone since the listing
                continue
    return found


def job_texts(address: str, submission_id: str) -> dict[str, str]:
    """Everything Ray serves about a job: its logs, its info, the job list, actor details."""
    import urllib.request

    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(address)
    texts = {
        "job logs": client.get_job_logs(submission_id),
        "job info": repr(client.get_job_info(submission_id)),
        "job list": repr(client.list_jobs()),
    }
    headers = {"Authorization": f"Bearer {os.environ.get('RAY_AUTH_TOKEN', '')}"}
    for api in ("/api/jobs/", "/api/v0/actors?detail=1", "/api/v0/tasks"):
        request = urllib.request.Request(address + api, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            texts[api] = response.read().decode(errors="replace")
    return texts


@pytest.mark.slow  # about 30 s: a dry run
def test_secrets_reach_the_job_and_are_written_nowhere(
    ray_head_and_temp: tuple[str, Path], tmp_path: Path
) -> None:
    """HF_TOKEN and an api_key_env set where the job is submitted are not sent with it (Ray
    logs runtime envs in plain text, and serves entrypoints and runtime envs through its job
    APIs): the job's driver exports them from the secrets folder on the head, and neither
    value is in any file of the session folder, the results, the job's logs or its info."""
    address, temp = ray_head_and_temp
    secrets_ = {"HF_TOKEN": secrets.token_hex(16), "OPENAI_API_KEY": secrets.token_hex(16)}
    out = tmp_path / "results"
    extra = {**secrets_, **secret_files(secrets_, tmp_path / "secrets")}
    proc = submit(
        address, out, "sweep-secrets", "--only", "gpt-4.1-nano,oracle", "--dry-run",
        extra_env=extra,
    )  # fmt: skip
    assert wait_job(address, "sweep-secrets") == "SUCCEEDED"
    log, _ = proc.communicate(timeout=120)
    assert "$HF_TOKEN is set here and is not sent" in log
    texts = job_texts(address, "sweep-secrets")
    # The driver saw the key: without it the plan says "not run: $OPENAI_API_KEY is not set".
    plan = [line for line in texts["job logs"].splitlines() if line.startswith("gpt-4.1-nano")]
    assert plan and plan[0].endswith("will run"), texts["job logs"][-3000:]
    time.sleep(2)  # let the head flush its logs
    for name, value in secrets_.items():
        assert holders(value, temp, out) == [], name
        assert [what for what, text in texts.items() if value in text] == [], name
        assert value not in log, name


def test_a_secret_in_runtime_env_is_refused(tmp_path: Path) -> None:
    proc = submit(
        "http://127.0.0.1:1", tmp_path, "never",
        extra_env={"RUNTIME_ENV": json.dumps({"env_vars": {"HF_TOKEN": "x"}})},
    )  # fmt: skip
    log, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "RUNTIME_ENV sets ['HF_TOKEN']" in log


def test_results_go_to_s3_by_default_and_nowhere_node_local(tmp_path: Path) -> None:
    """Without SWEEP_OUT the job writes to s3://$SWEEP_BUCKET/...; with neither, nothing is
    submitted (a node-local default would scatter shards across nodes)."""
    script = [str(REPO / "scripts" / "sweep_submit.sh")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWEEP_")}
    env |= {"RAY_ADDRESS": "http://127.0.0.1:1", "RAY": "echo", "PYTHON": sys.executable}
    neither = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True)
    assert neither.returncode == 2 and "SWEEP_BUCKET" in neither.stderr
    assert neither.stdout == ""  # `ray job submit` (here: echo) never ran
    bucket = subprocess.run(
        script, cwd=REPO, env={**env, "SWEEP_BUCKET": "b1"}, capture_output=True, text=True
    )
    assert bucket.returncode == 0, bucket.stderr
    assert "--out s3://b1/geosee/sweep-45" in bucket.stdout


FAKE_RAY = """#!/bin/sh
# `ray` stand-in: `dashboard` listens on its --port as the SSH forward would (and records its
# pid); `job submit` prints its argv.
echo "$*" >> "$CALLS"
if [ "$1" = dashboard ]; then
  echo $$ > "$CALLS.tunnel"
  exec "$PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(600)' "$3"
fi
echo "submitted: $*"
"""


def test_without_ray_address_the_script_opens_the_dashboard_tunnel_and_closes_it(
    tmp_path: Path,
) -> None:
    """`ray dashboard cluster.yaml` (Ray's SSH port-forward) in the background, the job to
    http://127.0.0.1:PORT once the port answers, and the tunnel gone when the script ends."""
    from tests.pipelines.processes import free_ports

    fake = tmp_path / "ray"
    fake.write_text(FAKE_RAY)
    fake.chmod(0o755)
    calls = tmp_path / "calls"
    (port,) = free_ports(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWEEP_", "RAY_ADDRESS"))}
    env |= {"SWEEP_BUCKET": "b1", "RAY": str(fake), "PYTHON": sys.executable,
            "CALLS": str(calls), "DASHBOARD_PORT": str(port)}  # fmt: skip
    script = [str(REPO / "scripts" / "sweep_submit.sh")]
    run = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    dashboard, submit, *_ = calls.read_text().splitlines()  # the entrypoint spans lines
    assert dashboard == f"dashboard --port {port} cluster.yaml"
    assert submit.startswith(f"job submit --address http://127.0.0.1:{port} ")
    tunnel = int((tmp_path / "calls.tunnel").read_text())
    deadline = time.monotonic() + 30
    while Path(f"/proc/{tunnel}").exists():  # killed by the script's EXIT trap
        assert time.monotonic() < deadline, "the dashboard tunnel outlived the script"
        time.sleep(0.2)
    # No cluster config to tunnel to: one line, exit 2, nothing started.
    calls.unlink()
    missing = subprocess.run(
        script, cwd=REPO, env={**env, "CLUSTER_YAML": str(tmp_path / "absent.yaml")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 2 and "CLUSTER_YAML" in missing.stderr
    assert not calls.exists()
