"""pyarrow's S3FileSystem against the loopback moto server of tests/pipelines/s3_server.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from tests.conftest import REPO
from tests.pipelines.s3_server import S3Server, s3_fixture, s3_server  # noqa: F401


def test_uri_round_trip(s3: S3Server) -> None:
    fs, path = pafs.FileSystem.from_uri(s3.uri("roundtrip/a.bin"))
    assert isinstance(fs, pafs.S3FileSystem)
    assert path == f"{s3.bucket}/roundtrip/a.bin"
    with fs.open_output_stream(path) as out:
        out.write(b"hello s3")
    with fs.open_input_stream(path) as src:
        assert src.read() == b"hello s3"
    # the same object, seen through a filesystem that takes nothing from the environment
    with s3.filesystem().open_input_file(s3.path("roundtrip/a.bin")) as src:
        assert src.read() == b"hello s3"


def test_recursive_listing(s3: S3Server) -> None:
    fs = s3.filesystem()
    keys = ["listing/a", "listing/sub/b", "listing/sub/deeper/c"]
    for key in keys:
        with fs.open_output_stream(s3.path(key)) as out:
            out.write(key.encode())
    infos = fs.get_file_info(pafs.FileSelector(s3.path("listing"), recursive=True))
    files = sorted(i.path for i in infos if i.type == pafs.FileType.File)
    dirs = sorted(i.path for i in infos if i.type == pafs.FileType.Directory)
    assert files == sorted(s3.path(k) for k in keys)
    assert dirs == [s3.path("listing/sub"), s3.path("listing/sub/deeper")]
    flat = fs.get_file_info(pafs.FileSelector(s3.path("listing"), recursive=False))
    assert sorted(i.path for i in flat) == [s3.path("listing/a"), s3.path("listing/sub")]


def test_missing_key_and_directory_prefix(s3: S3Server) -> None:
    fs = s3.filesystem()
    assert fs.get_file_info(s3.path("nothing/here")).type == pafs.FileType.NotFound
    assert fs.get_file_info(s3.path("prefix")).type == pafs.FileType.NotFound
    with fs.open_output_stream(s3.path("prefix/x")) as out:
        out.write(b"x")
    assert fs.get_file_info(s3.path("prefix")).type == pafs.FileType.Directory
    info = fs.get_file_info(s3.path("prefix/x"))
    assert info.type == pafs.FileType.File
    assert info.size == 1
    assert info.mtime is not None


def test_move_and_delete(s3: S3Server) -> None:
    fs = s3.filesystem()
    src, dst = s3.path("moving/tmp.part"), s3.path("moving/final")
    with fs.open_output_stream(src) as out:
        out.write(b"payload")
    fs.move(src, dst)
    assert fs.get_file_info(src).type == pafs.FileType.NotFound
    with fs.open_input_stream(dst) as f:
        assert f.read() == b"payload"
    fs.delete_file(dst)
    assert fs.get_file_info(dst).type == pafs.FileType.NotFound
    with pytest.raises(FileNotFoundError):
        fs.open_input_stream(dst).read()


def test_parquet_round_trip(s3: S3Server) -> None:
    fs, path = pafs.FileSystem.from_uri(s3.uri("parquet/shard-00000.parquet"))
    table = pa.table({"id": list(range(100)), "name": [f"item-{i}" for i in range(100)]})
    pq.write_table(table, path, filesystem=fs)
    back = pq.ParquetFile(fs.open_input_file(path)).read()
    assert back.equals(table)
    assert pq.read_table(path, filesystem=fs).equals(table)


def test_child_process_with_only_credentials(s3: S3Server) -> None:
    """A child whose environment holds only PATH and the credentials reaches the server
    through the URI."""
    script = textwrap.dedent(
        """
        import sys
        from pyarrow import fs as pafs
        fs, path = pafs.FileSystem.from_uri(sys.argv[1])
        with fs.open_output_stream(path) as out:
            out.write(b"from child")
        """
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", **s3.env}
    subprocess.run(
        [sys.executable, "-c", script, s3.uri("child/out.bin")],
        env=env,
        cwd=REPO,
        check=True,
        timeout=120,
    )
    with s3.filesystem().open_input_stream(s3.path("child/out.bin")) as f:
        assert f.read() == b"from child"


def test_server_stops_on_exit() -> None:
    with s3_server(bucket="short-lived") as server:
        fs = server.filesystem()
        assert fs.get_file_info(server.bucket).type == pafs.FileType.Directory
        pid, port = server.pid, int(server.endpoint.rsplit(":", 1)[1])
    assert not os.path.exists(f"/proc/{pid}")  # stopped and reaped
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
