"""A Hugging Face hub stand-in on loopback: the model-info API only
(`GET /api/models/{repo}/revision/{revision}`, what `HfApi.model_info` asks), answering from
a table the test sets and changes, 404 for anything else. huggingface_hub reads its address
from HF_ENDPOINT."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


class FakeHub:
    """The table (repo, revision) -> commit, and the requests seen."""

    def __init__(self) -> None:
        self.commits: dict[tuple[str, str], str] = {}
        self.requests: list[str] = []
        self.endpoint = ""


@contextmanager
def fake_hub() -> Iterator[FakeHub]:
    """A running fake hub; its `endpoint` is the value for HF_ENDPOINT."""
    hub = FakeHub()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            hub.requests.append(self.path)
            path = unquote(self.path.split("?", 1)[0])
            prefix = "/api/models/"
            body: dict[str, object] | None = None
            if path.startswith(prefix) and "/revision/" in path:
                repo, revision = path[len(prefix) :].split("/revision/", 1)
                sha = hub.commits.get((repo, revision))
                if sha is not None:
                    body = {"id": repo, "modelId": repo, "sha": sha, "private": False,
                            "siblings": [], "tags": []}  # fmt: skip
            data = json.dumps(body or {"error": "Repository Not Found"}).encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

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
