"""A Hugging Face hub stand-in on loopback, serving what huggingface_hub 2.4 asks for
(read from its own code in .venv: `hf_api.py`, `_snapshot_download.py`, `file_download.py`,
`utils/_http.py`); huggingface_hub reads its address from HF_ENDPOINT.

- `GET /api/models/{repo}/revision/{revision}` (`HfApi.model_info`, `repo_info`): the
  commit `sha` and the file list `siblings`;
- `GET /api/models/{repo}/tree/{commit}` (`list_repo_tree`, which `snapshot_download`
  lists a commit with): one page of `{"type": "file", "path", "size", "oid"}`;
- `HEAD` and `GET /{repo}/resolve/{commit}/{file}` (`hf_hub_download`): the bytes, with the
  `ETag` and `X-Repo-Commit` headers `get_hf_file_metadata` refuses to download without.

Anything unknown is a 404 with the `X-Error-Code` huggingface_hub turns into its error
classes: `RepoNotFound` (an unknown repo), `RevisionNotFound` (a known repo, an unknown
revision), `EntryNotFound` (an unknown file).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote


class FakeHub:
    """The tables the test sets and changes, and the request paths seen.

    `commits`: (repo, revision) -> commit; `files`: (repo, commit) -> {path: bytes}. A
    revision that is a commit of the repo resolves to itself, as on the hub."""

    def __init__(self) -> None:
        self.commits: dict[tuple[str, str], str] = {}
        self.files: dict[tuple[str, str], dict[str, bytes]] = {}
        self.requests: list[str] = []
        self.endpoint = ""

    def publish(self, repo: str, folder: Path, revision: str = "main", note: str = "") -> str:
        """Commit every file under `folder` to `repo` and point `revision` at it; returns
        the commit (a sha1 of the files and `note`, so a new note makes a new commit)."""
        files = {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }
        digest = hashlib.sha1(note.encode())  # noqa: S324 (a commit id, as git's)
        for name, data in files.items():
            digest.update(name.encode() + b"\0" + data)
        commit = digest.hexdigest()
        self.files[(repo, commit)] = files
        self.commits[(repo, revision)] = commit
        return commit

    def commit_of(self, repo: str, revision: str) -> str | None:
        """The commit `revision` names in `repo`, or None."""
        if (repo, revision) in self.files:
            return revision
        return self.commits.get((repo, revision))

    def knows(self, repo: str) -> bool:
        """Whether `repo` exists at all."""
        return any(r == repo for r, _ in (*self.commits, *self.files))


def _route(hub: FakeHub, path: str) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for a request path."""
    for prefix, kind in (("/api/models/", "info"), ("/", "resolve")):
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :]
        marker = "/revision/" if kind == "info" else "/resolve/"
        if kind == "info" and "/tree/" in rest:
            marker, kind = "/tree/", "tree"
        if marker not in rest:
            continue
        repo, tail = rest.split(marker, 1)
        revision, _, filename = tail.partition("/") if kind == "resolve" else (tail, "", "")
        if not hub.knows(repo):
            return _missing("RepoNotFound")
        commit = hub.commit_of(repo, revision)
        if commit is None:
            return _missing("RevisionNotFound")
        files = hub.files.get((repo, commit), {})
        if kind == "info":
            body = {"id": repo, "modelId": repo, "sha": commit, "private": False, "tags": [],
                    "siblings": [{"rfilename": name} for name in files]}  # fmt: skip
            return 200, {}, json.dumps(body).encode()
        if kind == "tree":
            entries = [
                {"type": "file", "path": name, "size": len(data), "oid": _etag(data)}
                for name, data in files.items()
            ]
            return 200, {}, json.dumps(entries).encode()
        if filename not in files:
            return _missing("EntryNotFound", commit)
        data = files[filename]
        return 200, {"ETag": f'"{_etag(data)}"', "X-Repo-Commit": commit}, data
    return _missing("RepoNotFound")


def _etag(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _missing(code: str, commit: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"X-Error-Code": code, "Content-Type": "application/json"}
    if commit:
        headers["X-Repo-Commit"] = commit
    return 404, headers, json.dumps({"error": code}).encode()


@contextmanager
def fake_hub() -> Iterator[FakeHub]:
    """A running fake hub; its `endpoint` is the value for HF_ENDPOINT."""
    hub = FakeHub()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, with_body: bool) -> None:
            hub.requests.append(self.path)
            status, headers, body = _route(hub, unquote(self.path.split("?", 1)[0]))
            self.send_response(status)
            headers.setdefault("Content-Type", "application/octet-stream")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self._answer(with_body=True)

        def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
            self._answer(with_body=False)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hub.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
