"""A real S3-compatible server on loopback (moto in server mode) for tests.

    from tests.pipelines.s3_server import s3_fixture  # noqa: F401  (the fixture `s3`)

    def test_something(s3):
        fs, path = pyarrow.fs.FileSystem.from_uri(s3.uri("run1/shard-0.parquet"))
        subprocess.run([...], env={**os.environ, **s3.env})

The fixture is registered under the name `s3`, so importing `s3_fixture` does not clash
with the `s3` argument of the tests (ruff's F811). It is module scoped: one server and one
bucket per test module, so tests in a module should write under prefixes of their own.
While it is active the credentials in `s3.env` are also in this process's os.environ
(restored afterwards), so `FileSystem.from_uri(s3.uri(...))` works here and in any child
that inherits the environment. The endpoint travels in the URI, not in the environment.

`s3_server()` is the same thing as a context manager, for use outside the fixture.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from pyarrow import fs as pafs

from tests.pipelines.processes import free_ports

REGION = "us-east-1"
ACCESS_KEY = "testing"
SECRET_KEY = "testing"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.1

# Variables that would make the AWS SDK in a child look elsewhere (another endpoint, a
# profile, a session token the fake credentials do not go with); the fixture unsets them.
_CONFLICTING_ENV = (
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # "127.0.0.1:PORT"
    bucket: str
    pid: int
    env: dict[str, str] = field(
        default_factory=lambda: {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )

    def uri(self, prefix: str = "") -> str:
        """`s3://BUCKET/PREFIX?endpoint_override=...&scheme=http&region=...`: what
        pyarrow.fs.FileSystem.from_uri needs to reach this server, given only credentials
        in the environment. (pyarrow 26 accepts region, scheme, endpoint_override,
        allow_bucket_creation, allow_bucket_deletion, tls_ca_file_path and
        tls_verify_certificates as query parameters and rejects any other.)"""
        key = prefix.strip("/")
        path = f"{self.bucket}/{key}" if key else self.bucket
        return f"s3://{path}?endpoint_override={self.endpoint}&scheme=http&region={REGION}"

    def filesystem(self) -> pafs.S3FileSystem:
        """A filesystem on this server that needs nothing from the environment; paths on
        it are "BUCKET/KEY"."""
        return pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            scheme="http",
            endpoint_override=self.endpoint,
        )

    def path(self, key: str) -> str:
        """The path of KEY for `filesystem()`: "BUCKET/KEY"."""
        return f"{self.bucket}/{key.strip('/')}"


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{endpoint}/", timeout=1):
            return True
    except urllib.error.HTTPError:  # any HTTP answer means it is serving
        return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group (its own session, so only what it started), then
    SIGKILL it if it has not exited after STOP_TIMEOUT_S; always reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _start(port: int, log) -> subprocess.Popen[bytes]:
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    # stdout/stderr go to a file, not a pipe: moto logs every request, and a pipe nobody
    # reads fills up and blocks the server.
    return subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


@contextlib.contextmanager
def s3_server(
    bucket: str = "test-bucket", timeout_s: float = START_TIMEOUT_S
) -> Iterator[S3Server]:
    """Start moto's S3 server on a free loopback port, wait until it answers, create
    `bucket`, yield an S3Server; stop the server on exit. A port taken between choosing and
    binding it makes the server exit at once; that is retried on another port."""
    with tempfile.TemporaryFile() as log:
        proc = None
        try:
            deadline = time.monotonic() + timeout_s
            for _attempt in range(3):
                log.seek(0)
                log.truncate()
                port = free_ports(1)[0]
                endpoint = f"127.0.0.1:{port}"
                proc = _start(port, log)
                while proc.poll() is None and time.monotonic() < deadline:
                    if _answers(endpoint):
                        break
                    time.sleep(POLL_S)
                if proc.poll() is None or time.monotonic() >= deadline:
                    break
                # exited early (e.g. the port was taken meanwhile): try another port
            if proc is None or proc.poll() is not None or not _answers(endpoint):
                log.seek(0)
                output = log.read().decode(errors="replace")[-4000:]
                raise RuntimeError(
                    f"moto server on {endpoint} did not answer within {timeout_s:g} s "
                    f"(exit code {proc.poll() if proc else None}); its output:\n{output}"
                )
            server = S3Server(endpoint=endpoint, bucket=bucket, pid=proc.pid)
            creator = pafs.S3FileSystem(
                access_key=ACCESS_KEY,
                secret_key=SECRET_KEY,
                region=REGION,
                scheme="http",
                endpoint_override=endpoint,
                allow_bucket_creation=True,
            )
            creator.create_dir(bucket)
            yield server
        finally:
            if proc is not None:
                _stop(proc)


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    names = [*env, *_CONFLICTING_ENV]
    saved = {name: os.environ.get(name) for name in names}
    try:
        for name in _CONFLICTING_ENV:
            os.environ.pop(name, None)
        os.environ.update(env)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module", name="s3")
def s3_fixture() -> Iterator[S3Server]:
    """A moto S3 server with one empty bucket for this test module; its credentials are in
    os.environ while the fixture is active."""
    with s3_server() as server, _environment(server.env):
        yield server
