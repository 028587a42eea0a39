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
def ray_head() -> Iterator[str]:
    """Dashboard address of a fresh head; stopped by its own process group afterwards."""
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
        yield address
    finally:
        # The head was started with --block in its own session: SIGTERM to that process group
        # stops exactly the raylet, GCS and workers this fixture started.
        if head.poll() is None:
            os.killpg(head.pid, signal.SIGTERM)
            try:
                head.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)
                head.wait()
        shutil.rmtree(temp, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def submit(address: str, out: Path, submission_id: str, *sweep_args: str) -> subprocess.Popen:
    """Start scripts/sweep_submit.sh without waiting; the runtime env installs nothing."""
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
        "RAY_ADDRESS": address,
        "RUNTIME_ENV": "{}",
        "SWEEP_OUT": str(out),
        "PYTHON": sys.executable,
        "JOB_ARGS": f"--submission-id {submission_id}",
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
