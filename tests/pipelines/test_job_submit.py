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
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (fixture `s3`)

VENV_BIN = Path(sys.executable).parent
# The S3 secret key of the head's environment, as an operator exports it before `ray start`
# for an S3-compatible store (store.storage: credentials come from each process's
# environment): the raylet's workers inherit it. The loopback S3 server accepts any key.
# AWS secret keys hold '/' and '+', which JSON, URL and base64 encodings each change.
S3_SECRET = f"geoseeS3/{secrets.token_hex(10)}+Key"
S3_ENV = {"AWS_ACCESS_KEY_ID": "geosee-test", "AWS_SECRET_ACCESS_KEY": S3_SECRET,
          "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip


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
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", **S3_ENV}
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


def submit(
    address: str,
    out: Path | str,
    submission_id: str,
    *sweep_args: str,
    extra_env: dict | None = None,
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


def secret_files(secrets: dict[str, str], folder: Path) -> dict[str, str]:
    """What `ray up` puts on every node (cluster.yaml: file_mounts): one file per variable."""
    folder.mkdir(mode=0o700)
    for name, value in secrets.items():
        (folder / name).write_text(value + "\n")
        (folder / name).chmod(0o600)
    return {"CLUSTER_SECRETS_DIR": str(folder)}


def secret_forms(secret: str) -> list[str]:
    """`secret` as a record could hold it: plain, JSON-escaped (also with `\\/`), URL-escaped
    (either case), Python's repr, and every base64 run of it (each offset mod 3)."""
    from urllib.parse import quote

    from actors.http_redact import base64_runs

    forms = [secret, json.dumps(secret)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/")]
    forms += [quote(secret, safe=""), quote(secret, safe="").lower(), repr(secret)[1:-1]]
    return list(dict.fromkeys(forms + base64_runs(secret.encode())))


def holders(forms: list[str], *roots: Path) -> list[tuple[Path, str]]:
    """(file, form) for each file under `roots` whose bytes hold one of `forms`."""
    found = []
    for root in roots:
        for path in root.rglob("*"):
            try:
                data = path.read_bytes() if path.is_file() else b""
            except OSError:  # a socket, or gone since the listing
                continue
            found += [(path, form) for form in forms if form.encode() in data]
    return found


def store_texts(uri: str) -> dict[str, str]:
    """Every object under a results URI: Parquet shards as their rows (compressed pages would
    hide a secret), others as their bytes."""
    import pyarrow.parquet as pq

    from store.storage import RemotePath, location

    root = location(uri)
    assert isinstance(root, RemotePath)
    texts = {}
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        if path.name.endswith(".parquet"):
            with root.filesystem.open_input_file(path.fs_path) as stream:
                texts[path.fs_path] = str(pq.read_table(stream).to_pylist())
        else:
            texts[path.fs_path] = path.read_bytes().decode("utf-8", "replace")
    return texts


# The state API's lists (`ray list actors|jobs|tasks|workers|...` read these), in detail.
STATE_APIS = ("actors", "jobs", "tasks", "workers", "nodes", "placement_groups", "objects")


def job_texts(address: str, submission_id: str) -> dict[str, str]:
    """Everything Ray serves about a job: its logs, its info, the job list, and the state
    API's lists in detail."""
    import urllib.request

    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(address)
    texts = {
        "job logs": client.get_job_logs(submission_id),
        "job info": repr(client.get_job_info(submission_id)),
        "job list": repr(client.list_jobs()),
    }
    headers = {"Authorization": f"Bearer {os.environ.get('RAY_AUTH_TOKEN', '')}"}
    apis = ["/api/jobs/", *(f"/api/v0/{name}?detail=1&limit=10000" for name in STATE_APIS)]
    for api in apis:
        request = urllib.request.Request(address + api, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            texts[api] = response.read().decode(errors="replace")
    return texts


def models_folder(folder: Path, base_url: str) -> Path:
    """The local oracle, random and tiny-llm configs, and an API model on a loopback server
    whose key is $OPENAI_API_KEY."""
    folder.mkdir()
    for name in ("oracle", "random", "tiny-llm"):
        shutil.copyfile(
            REPO / "configs" / "models" / "local" / f"{name}.yaml", folder / f"{name}.yaml"
        )
    (folder / "api-model.yaml").write_text(
        "name: api-model\nrepo: gpt-test\nengine: http\nmodality: text\nsetups: [text]\n"
        f"api_base: {base_url}\napi_key_env: OPENAI_API_KEY\n"
    )
    return folder


def result_rows(uri: str) -> pl.DataFrame:
    """Every row of the results' NoReGeo shards in the store."""
    import pyarrow.parquet as pq

    from store.storage import RemotePath, location

    root = location(uri)
    assert isinstance(root, RemotePath)
    tables = []
    for path in root.rglob("*"):
        if "/noregeo/" in path.fs_path and path.fs_path.endswith(".parquet"):
            with root.filesystem.open_input_file(path.fs_path) as stream:
                tables.append(pl.from_arrow(pq.read_table(stream)))
    return pl.concat(tables, how="diagonal_relaxed")


@pytest.mark.slow  # about 90 s on two busy cores; still part of `make test`
def test_ray_job_submit_runs_a_small_sweep_and_records_no_secret(
    ray_head_and_temp: tuple[str, Path], tmp_path: Path, s3: S3Server
) -> None:
    """A small sweep (oracle, random, tiny-llm and an API model) through
    scripts/sweep_submit.sh, its results in an S3 store. HF_TOKEN, the API model's key and
    the S3 secret key set where the job is submitted are not sent with it (Ray logs runtime
    envs in plain text, and serves entrypoints and runtime envs through its job APIs): the
    job's driver exports them from the secrets folder on the head, the model's task gets
    the API key through the object store, the workers have the S3 key from the head's
    environment. The key reaches the server and the rows reach the store, and no form of
    any secret (plain, JSON or URL escaped, base64) is in any file of the session folder,
    the results, the job's logs, its info or the state API's actors, jobs, tasks and
    workers."""
    from tests.actors.loopback_server import LoopbackServer

    address, temp = ray_head_and_temp
    secrets_ = {
        "HF_TOKEN": "hf_" + secrets.token_hex(16),
        "OPENAI_API_KEY": f'sk-leak\\t"/+{secrets.token_hex(12)}',
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
    }
    uri = s3.uri("small-sweep")
    extra = {**secrets_, **secret_files(secrets_, tmp_path / "secrets")}
    with LoopbackServer(answer=lambda _: json.dumps({"answer": 1})) as server:
        models = models_folder(tmp_path / "models", server.base_url)
        proc = submit(
            address, uri, "sweep-small", "--models", str(models),
            "--only", "oracle,random,tiny-llm,api-model", "--tasks", "C-BCT-CT,U-PAP-PT",
            "--per-task", "2", "--progress-interval", "5", extra_env=extra,
        )  # fmt: skip
        assert wait_job(address, "sweep-small") == "SUCCEEDED"
        log, _ = proc.communicate(timeout=120)
        sent = {r.headers["authorization"] for r in server.requests}
    assert "sweep progress" in log
    assert "$HF_TOKEN is set here and is not sent" in log
    assert sent == {f"Bearer {secrets_['OPENAI_API_KEY']}"}  # the key was used
    df = result_rows(uri)
    counts = dict(df.group_by("model").len().iter_rows())
    assert counts == {"oracle": 12, "random": 12, "tiny-llm": 4, "api-model": 4}
    assert df["request_key"].n_unique() == df.height
    assert df.filter(pl.col("model") == "oracle")["correct"].all()
    # .git stays home; the run records still name the commit the job was submitted from.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    stored = store_texts(uri)
    records = [
        json.loads(t) for name, t in stored.items() if "/runs/" in name and name.endswith(".json")
    ]
    assert records
    assert all(r["git_commit"].removesuffix("-dirty") == head for r in records), records
    texts = job_texts(address, "sweep-small")
    time.sleep(2)  # let the head flush its logs
    places = {**texts, **stored, "submit output": log}
    for name, value in secrets_.items():
        forms = secret_forms(value)
        assert holders(forms, temp) == [], name
        found = [(place, f) for place, text in places.items() for f in forms if f in text]
        assert found == [], name


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
