"""What one node's probe of the results store answers, and the line that refuses the run,
without a cluster: the probe runs here with a node's credentials, against moto's S3 with
IAM-like access control (tests/pipelines/s3_access.py: a writer, and a reader whose writes
are answered AccessDenied). The cluster itself: tests/pipelines/test_unwritable_node.py."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow.fs as pafs
import pytest

from pipelines.engines.stages import node_reach
from store import storage
from store.errors import UsageError
from store.storage import RemotePath, location
from tests.pipelines.s3_access import Principal, writer_and_reader
from tests.pipelines.s3_server import S3Server, _environment, s3_server


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[S3Server, Principal, Principal]]:
    with s3_server() as server:
        yield (server, *writer_and_reader(server))
    storage._filesystem.cache_clear()  # no client of a stopped server left to a later test


def _probe_as(who: Principal, server: S3Server, folder: RemotePath, name: str) -> str | None:
    """The probe as a node holding `who`'s credentials runs it (a fresh S3 client: the
    process keeps one per store, built with the credentials of its first use)."""
    storage._filesystem.cache_clear()
    with _environment({**server.env, **who.env()}):
        return node_reach.probe(str(folder), name)


def _listing(server: S3Server, who: Principal, prefix: str) -> list[str]:
    """Every path under `prefix`, folders (pyarrow's empty markers among them) included."""
    fs = pafs.S3FileSystem(access_key=who.key_id, secret_key=who.secret, region="us-east-1",
                           scheme="http", endpoint_override=server.endpoint)  # fmt: skip
    selector = pafs.FileSelector(server.path(prefix), allow_not_found=True, recursive=True)
    return [info.path for info in fs.get_file_info(selector)]


def test_a_node_that_may_only_read_answers_access_denied_without_its_keys(
    store: tuple[S3Server, Principal, Principal],
) -> None:
    server, writer, reader = store
    folder = location(server.uri("denied/.node-check-t1"))
    assert isinstance(folder, RemotePath)
    reason = _probe_as(reader, server, folder, "node-b")
    print(reason)
    assert reason is not None and "Access Denied" in reason, reason
    assert "\n" not in reason and len(reason) <= node_reach.REASON_CHARS
    for secret in (reader.key_id, reader.secret, writer.key_id, writer.secret):
        assert secret not in reason
    assert _listing(server, writer, "denied") == []  # the write never landed


def test_a_node_that_may_write_leaves_nothing(
    store: tuple[S3Server, Principal, Principal],
) -> None:
    server, writer, _ = store
    folder = location(server.uri("allowed/.node-check-t2"))
    assert isinstance(folder, RemotePath)
    assert _probe_as(writer, server, folder, "node-a") is None
    with _environment({**server.env, **writer.env()}):  # the driver's part, as the driver
        node_reach._remove(folder)  # pyarrow's folder markers too
    assert _listing(server, writer, "allowed") == []


def test_the_refusal_is_one_line_naming_each_node_the_store_and_what_to_do() -> None:
    out = location("s3://results/run?endpoint_override=10.0.0.9:9000&scheme=http&region=x")
    assert isinstance(out, RemotePath)
    failures = [
        node_reach.NodeFailure("10.0.1.7", "AWS Error ACCESS_DENIED during PutObject"),
        node_reach.NodeFailure("10.0.1.8", "no answer in 120 s"),
    ]
    line = str(node_reach.refusal("evaluate", out, failures))
    assert "\n" not in line
    assert line.startswith("evaluate: ")
    assert "s3://results/run (endpoint 10.0.0.9:9000)" in line and "region=" not in line
    assert "node 10.0.1.7: AWS Error ACCESS_DENIED" in line and "node 10.0.1.8: no answer" in line
    assert "write access" in line and "instance profile" in line
    assert isinstance(node_reach.refusal("evaluate", out, failures), UsageError)  # exit 2


def test_an_error_line_loses_the_credentials_it_carries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t/Value+xyz")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "tokenvalue123")
    err = OSError(
        "denied for AKIAABCDEFGHIJKLMNOP with s3cr3t/Value+xyz and tokenvalue123\nsecond line"
    )
    line = node_reach.first_line(err)
    assert line == "denied for *** with *** and ***", line
