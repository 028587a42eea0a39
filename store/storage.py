"""Where results live: a local folder (also one on an NFS mount every node has) or a URI of
any file system pyarrow reads (`s3://`, `gs://`, `abfs://`, `hdfs://`).

A local folder stays a `pathlib.Path`. A URI becomes a `RemotePath`, which answers the part
of `Path`'s interface the pipelines use (`/`, `parent`, `exists`, `glob`, `read_bytes`, ...)
through one pyarrow `FileSystem`, so shards, run records, resume keys and summaries all go
through the same object. Code that must act differently on an object store (atomic writes,
the run lock, moving a file) asks `isinstance(path, RemotePath)`.

What differs on an object store (see store.atomic and store.run_lock):
- There are no directories: `mkdir` does nothing, and a folder exists once a file is in it.
- A write is one PUT of the whole file: pyarrow completes the upload only when the stream is
  closed, so a writer killed mid-upload leaves no object, and readers see all or nothing.
- `move` is a copy and a delete: not atomic, but it is only used to quarantine unreadable
  shards, whose rows count as unfinished either way.

A URI travels to Ray workers as its text (`str(path)`), and each process builds its own
file system from it, with credentials from that process's environment (AWS_* variables, an
instance role, ...). Credentials in the URI itself are refused: the URI is printed, logged
and stored in run records.
"""

from __future__ import annotations

import fnmatch
import functools
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TypeAlias
from urllib.parse import parse_qsl, urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from store.errors import UsageError, error_chain
from store.retries import retry_budget, retry_delay, s3_retry_strategy

# The URI schemes pyarrow's FileSystem.from_uri builds a file system for (besides file://).
KNOWN_SCHEMES = ("s3", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs")
# Query parameters that carry secrets: refused, so no URI we print or store holds one.
# The AWS SDK reads a ranged GET's answer into a buffer of the object's size, so an error
# answer (SlowDown's XML body, about 250 bytes) longer than a small object (a run lock, a
# settings file) overflows it, and the SDK does not retry what it then reports.
_UNRETRIED_READ = "Failed to flush response stream"
_SECRET_PARAMS = {"access_key", "secret_key", "session_token", "account_key", "sas_token"}


class StorageURIError(UsageError):
    """A results URI we refuse: malformed, with credentials in it, or of an unknown scheme."""


class RemotePath:
    """A file or folder under a file-system URI: `scheme://netloc/seg/seg?query`.

    Children share their root's `FileSystem`; equal URIs compare and hash equal, and paths
    sort by their parts, as `Path`s do.
    """

    def __init__(
        self, scheme: str, netloc: str, query: str, segments: tuple[str, ...] = ()
    ) -> None:
        self.scheme, self.netloc, self.query, self.segments = scheme, netloc, query, segments

    @classmethod
    def parse(cls, uri: str) -> RemotePath:
        """The RemotePath of `uri`; StorageURIError if it is not scheme://netloc/..., holds
        credentials, or has '.' or '..' segments."""
        parts = urlsplit(uri)
        if not parts.scheme or not parts.netloc:
            raise StorageURIError(f"{uri!r} is not a URI of the form scheme://bucket/path")
        if parts.password or (parts.username and parts.scheme in ("s3", "gs")):
            raise StorageURIError(
                f"{_redacted(uri)} holds credentials; give them through the environment "
                "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, an instance role, ...)"
            )
        secret = sorted(k for k, _ in parse_qsl(parts.query) if k in _SECRET_PARAMS)
        if secret:
            raise StorageURIError(
                f"{_redacted(uri)} holds credentials ({', '.join(secret)}); give them through "
                "the environment"
            )
        segments = tuple(s for s in parts.path.split("/") if s)
        if any(s in (".", "..") for s in segments):
            raise StorageURIError(f"{uri!r}: '.' and '..' are not allowed in a URI path")
        return cls(parts.scheme, parts.netloc, parts.query, segments)

    # --- identity -------------------------------------------------------------------------
    def __str__(self) -> str:
        path = "/".join(self.segments)
        return f"{self.scheme}://{self.netloc}/{path}" + (f"?{self.query}" if self.query else "")

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def _key(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (self.scheme, self.netloc, self.query, self.segments)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: RemotePath) -> bool:
        return self._key() < other._key()

    # --- pure path operations -------------------------------------------------------------
    def __truediv__(self, part: str | PurePosixPath) -> RemotePath:
        added = tuple(s for s in str(part).split("/") if s)
        if any(s in (".", "..") for s in added):
            raise ValueError(f"{part!r}: '.' and '..' are not allowed under {self}")
        return RemotePath(self.scheme, self.netloc, self.query, self.segments + added)

    @property
    def name(self) -> str:
        """The last segment; '' for the root, as `Path.name`."""
        return self.segments[-1] if self.segments else ""

    @property
    def stem(self) -> str:
        """The name less its last suffix, as `Path.stem`."""
        return PurePosixPath(self.name).stem if self.name else ""

    @property
    def parent(self) -> RemotePath:
        """The folder one segment up; the root is its own parent, as with `Path`."""
        return RemotePath(self.scheme, self.netloc, self.query, self.segments[:-1])

    @property
    def parents(self) -> list[RemotePath]:
        """Every folder above, nearest first, ending at the root (as `Path.parents`)."""
        return [
            RemotePath(self.scheme, self.netloc, self.query, self.segments[:n])
            for n in range(len(self.segments) - 1, -1, -1)
        ]

    def relative_to(self, other: RemotePath) -> PurePosixPath:
        """The segments below `other`; ValueError if this path is not under it."""
        n = len(other.segments)
        if other._key()[:3] != self._key()[:3] or self.segments[:n] != other.segments:
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(*self.segments[n:])

    def resolve(self) -> RemotePath:
        """This path itself: a URI is already absolute (the `Path` API, for shared code)."""
        return self  # already absolute

    # --- file system ----------------------------------------------------------------------
    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow FileSystem of this URI's root, one client shared by every path under it."""
        return _filesystem(self.scheme, self.netloc, self.query)[0]

    @property
    def fs_path(self) -> str:
        """The path the `filesystem` knows this file by (`bucket/key` on S3)."""
        base = _filesystem(self.scheme, self.netloc, self.query)[1].rstrip("/")
        return "/".join([base, *self.segments]) if self.segments else base or "/"

    def _info(self) -> pafs.FileInfo:
        return self.filesystem.get_file_info(self.fs_path)

    def exists(self) -> bool:
        """Whether a file or folder is at this path (one metadata request)."""
        return self._info().type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        """Whether this path is a folder (one metadata request)."""
        return self._info().type == pafs.FileType.Directory

    def is_file(self) -> bool:
        """Whether this path is a file (one metadata request)."""
        return self._info().type == pafs.FileType.File

    def mtime(self) -> float | None:
        """Seconds since the epoch of the last write, None if the store does not say."""
        stamp = self._info().mtime
        return None if stamp is None else stamp.timestamp()

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to do: on an object store a folder exists once a file is written in it
        (an empty marker object would only be something more to list)."""

    def rmdir(self) -> None:
        """Nothing to do, for the same reason."""

    def iterdir(self) -> Iterator[RemotePath]:
        """The files and folders directly in this folder; none when it is missing."""
        selector = pafs.FileSelector(self.fs_path, allow_not_found=True, recursive=False)
        for info in self.filesystem.get_file_info(selector):
            yield self / info.base_name

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        """Children whose name matches `pattern` (one level, no `/` in it)."""
        return (p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern))

    def rglob(self, pattern: str) -> Iterator[RemotePath]:
        """Files and folders at any depth below whose name matches `pattern`."""
        selector = pafs.FileSelector(self.fs_path, allow_not_found=True, recursive=True)
        base = self.fs_path.rstrip("/") + "/"
        for info in self.filesystem.get_file_info(selector):
            if fnmatch.fnmatchcase(info.base_name, pattern) and info.path.startswith(base):
                yield self / info.path[len(base) :]

    def read_bytes(self) -> bytes:
        """The whole object, in one read; retried (store.retries' budget) when an error
        answer came in place of a small object (`_UNRETRIED_READ`)."""
        _, attempts = retry_budget()
        for retried in range(attempts):
            try:
                with self.filesystem.open_input_stream(self.fs_path) as f:
                    data: bytes = f.read()
                return data
            except OSError as err:
                if _UNRETRIED_READ not in str(err) or retried + 1 >= attempts:
                    raise
                time.sleep(retry_delay(retried))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def read_text(self, encoding: str = "utf-8") -> str:
        """The whole object, decoded."""
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> int:
        """One PUT: the object appears whole when the upload completes, or not at all."""
        with self.filesystem.open_output_stream(self.fs_path) as f:
            f.write(data)
        return len(data)

    def unlink(self, missing_ok: bool = False) -> None:
        """Delete the object; FileNotFoundError when it is missing, unless `missing_ok`."""
        try:
            self.filesystem.delete_file(self.fs_path)
        except FileNotFoundError:
            if not missing_ok:
                raise


# A local folder or a RemotePath: what every results reader and writer takes.
Location: TypeAlias = Path | RemotePath


def is_uri(text: str) -> bool:
    """Whether `text` names a URI (not a local path, `file://` counted as local)."""
    scheme = urlsplit(text).scheme
    return "://" in text and len(scheme) > 1 and scheme != "file"


def location(text: str | Location) -> Location:
    """A results location from a CLI value or a path's text (as Ray workers receive it)."""
    if isinstance(text, RemotePath | Path):
        return text
    if text.startswith("file://"):
        return Path(urlsplit(text).path)
    return RemotePath.parse(text) if is_uri(text) else Path(text)


def children(folder: Location, pattern: str = "*") -> list[Location]:
    """`folder`'s files and folders named like `pattern`, sorted; [] when it is missing."""
    found: list[Location] = list(folder.glob(pattern)) if folder.is_dir() else []
    return sorted(found, key=sort_key)


def sort_key(path: Location) -> tuple[str, ...]:
    """Orders paths as `Path` does, by their parts, remote or local."""
    return path.segments if isinstance(path, RemotePath) else path.parts


def relative_parts(path: Location, root: Location) -> tuple[str, ...]:
    """The names leading from `root` down to `path` (ValueError if it is not under it)."""
    if isinstance(path, RemotePath) and isinstance(root, RemotePath):
        return path.relative_to(root).parts
    if isinstance(path, Path) and isinstance(root, Path):
        return path.relative_to(root).parts
    raise ValueError(f"{path} is not under {root}")


def parquet_file(path: Location) -> pq.ParquetFile:
    """An open Parquet file (use it as a context manager) whose pages are checked against
    their CRC32 when they carry one (store.atomic writes them): a mismatch raises an
    OSError on read. Files written without checksums read as before."""
    if isinstance(path, RemotePath):
        source = path.filesystem.open_input_file(path.fs_path)
        return pq.ParquetFile(source, page_checksum_verification=True)
    return pq.ParquetFile(path, page_checksum_verification=True)


def read_table(path: Location, columns: list[str] | None = None) -> pa.Table:
    """The Parquet file's rows (only `columns`, when given), local or remote."""
    with parquet_file(path) as f:
        return f.read(columns=columns)


def move(source: Location, target: Location) -> None:
    """`os.replace` locally; copy and delete on an object store (see the module docstring).
    FileNotFoundError when `source` is gone."""
    if isinstance(source, RemotePath) and isinstance(target, RemotePath):
        source.filesystem.move(source.fs_path, target.fs_path)
    elif isinstance(source, Path) and isinstance(target, Path):
        source.replace(target)
    else:
        raise ValueError(f"cannot move {source} to {target}: one local, one remote")


def _redacted(uri: str) -> str:
    parts = urlsplit(uri)
    host = parts.hostname or ""
    return f"{parts.scheme}://***@{host}{parts.path}" if parts.username else uri.split("?")[0]


@functools.lru_cache(maxsize=16)
def _filesystem(scheme: str, netloc: str, query: str) -> tuple[pafs.FileSystem, str]:
    """The file system of a URI root and the path it gives that root; one per process and
    root, so every path under it shares one client."""
    uri = f"{scheme}://{netloc}" + (f"?{query}" if query else "")
    try:
        filesystem, path = pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise StorageURIError(f"{uri.split('?')[0]}: {err}") from err
    if isinstance(filesystem, pafs.S3FileSystem):
        filesystem = _with_retries(filesystem)
    return filesystem, path


def _with_retries(filesystem: pafs.S3FileSystem) -> pafs.S3FileSystem:
    """The same S3 file system with store.retries' strategy: from_uri takes none, and its
    own gives up after 6 s of SlowDown. Its options (endpoint, scheme, region, resolved from
    the bucket when the URI names none, ...) are read back from the keyword arguments its
    pickled form rebuilds it from, so nothing from_uri set is lost; credentials stay unset,
    so the SDK reads them from the environment as before."""
    options = dict(filesystem.__reduce__()[1][0])
    return pafs.S3FileSystem(**options, retry_strategy=s3_retry_strategy())


def storage_failure(err: BaseException, roots: list[RemotePath]) -> str | None:
    """One line saying which store stopped answering, when `err` (or an error it was raised
    from, a Ray task's included) is an OSError about one of `roots`' buckets; None when it
    is not a storage failure of theirs. The line names the URI (without its query) and the
    endpoint, and the first line of the store's own message."""
    for current in error_chain(err):
        if isinstance(current, OSError):
            text = str(current)
            for root in roots:
                if f"'{root.netloc}'" in text or f"/{root.netloc}/" in text:
                    reason = " ".join(text.splitlines()[0].split())[:240] if text else "OSError"
                    return f"the store {described(root)} stopped answering: {reason}"
    return None


def described(root: RemotePath) -> str:
    """How a message names a store: its URI without the query (which may say more than
    the user typed), and the endpoint, `default` when the URI names none. A RemotePath
    holds no credentials (RemotePath.parse refuses them)."""
    endpoint = dict(parse_qsl(root.query)).get("endpoint_override", "default")
    return f"{root.scheme}://{root.netloc}/{'/'.join(root.segments)} (endpoint {endpoint})"
