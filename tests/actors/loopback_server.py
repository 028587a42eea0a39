"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

    with LoopbackServer(script=[Reply(429, headers={"Retry-After": "0"})]) as server:
        engine = HTTPEngine(server.base_url, "m")       # base_url ends in /v1
        ...
        assert len(server.requests) == 2

Which reply a request gets, first match wins:
1. `decide(request_json, attempt)` if given and it returns a Reply (`attempt` counts earlier
   requests with the same `messages`, so "every row fails once, then succeeds" stays exact
   under concurrency);
2. the next unused entry of `script` (shared, in order of arrival);
3. `then` (default: 200).
A 200 reply without `text` or `body` carries `answer(request_json)` as the assistant text.

The server is bounded: after `max_requests` it answers 503 and stops, and it stops by
itself after `lifetime_s`. It records every request (path, lower-cased headers, JSON body)
and the most requests it ever had in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Reply:
    """One scripted response. `drop` closes the connection without answering."""

    status: int = 200
    text: str | None = None
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    usage: bool = True


@dataclass(frozen=True)
class Recorded:
    """A request as the server saw it."""

    path: str
    headers: dict[str, str]
    json: Any


def echo_last_text(request: Mapping[str, Any]) -> str:
    """Default answer: the text of the last message, so tests can tell rows apart."""
    content = request["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def fail_first(times: int, status: int = 429, **reply: Any) -> list[Reply]:
    """A script: `times` replies with `status` (extra Reply fields allowed), then `then`."""
    return [Reply(status=status, **reply) for _ in range(times)]


def always(status: int, **reply: Any) -> Reply:
    """A `then` reply that every request gets, e.g. `then=always(500)`."""
    return Reply(status=status, **reply)


def _words(text: str) -> int:
    return len(text.split())


class LoopbackServer:
    """A fake OpenAI-compatible server in a background thread; use it as a context manager."""

    def __init__(
        self,
        script: Sequence[Reply] = (),
        then: Reply | None = None,
        answer: Callable[[Mapping[str, Any]], str] = echo_last_text,
        decide: Callable[[Mapping[str, Any], int], Reply | None] | None = None,
        max_requests: int = 500,
        lifetime_s: float = 30.0,
    ) -> None:
        self.script = list(script)
        self.then = then or Reply()
        self.answer = answer
        self.decide = decide
        self.max_requests = max_requests
        self.lifetime_s = lifetime_s
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._stopped = threading.Event()

    @property
    def base_url(self) -> str:
        """The `/v1` root an OpenAI client is given."""
        if self._httpd is None:
            raise RuntimeError("LoopbackServer is not started; use it in a `with` block")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> LoopbackServer:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval: stop() waits up to one interval, and tests stop it often.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        # A test that forgets to stop the server (or hangs) must not leave it running.
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port; safe to call more than once, from any thread."""
        with self._lock:
            if self._stopped.is_set() or self._httpd is None:
                return
            self._stopped.set()
        if self._timer is not None:
            self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _choose(self, request: Mapping[str, Any]) -> Reply:
        """Pick a request's reply (see the module docstring)."""
        with self._lock:
            key = json.dumps(request.get("messages"), sort_keys=True)
            attempt = self._attempts[key]
            self._attempts[key] += 1
        if self.decide is not None:
            chosen = self.decide(request, attempt)
            if chosen is not None:
                return chosen
        with self._lock:
            return self.script.pop(0) if self.script else self.then

    def _completion(self, request: Mapping[str, Any], reply: Reply) -> bytes:
        text = reply.text if reply.text is not None else self.answer(request)
        body: dict[str, Any] = {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
        if reply.usage:
            prompt = sum(_words(echo_last_text({"messages": [m]})) for m in request["messages"])
            body["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": _words(text),
                "total_tokens": prompt + _words(text),
            }
        return json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    owner: LoopbackServer
    # HTTP/1.1 so clients keep connections alive, as they would against a real server.
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log: tests inspect `requests` instead."""

    def do_POST(self) -> None:
        owner = self.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            request = json.loads(raw or b"null")
        except json.JSONDecodeError:
            request = None
        with owner._lock:
            owner.requests.append(
                Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, request)
            )
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
            over_budget = len(owner.requests) > owner.max_requests
        try:
            if over_budget:
                self._send(Reply(503, body=b'{"error": "loopback request budget exhausted"}'))
                return
            if self.path != CHAT_PATH or not isinstance(request, dict):
                self._send(Reply(404 if self.path != CHAT_PATH else 400, body=b'{"error":"bad"}'))
                return
            reply = owner._choose(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.drop:
                self.close_connection = True
                return
            if reply.body is None and reply.status == 200:
                reply = Reply(200, body=owner._completion(request, reply), headers=reply.headers)
            self._send(reply)
        finally:
            with owner._lock:
                owner.in_flight -= 1
            if over_budget:
                threading.Thread(target=owner.stop, daemon=True).start()

    def _send(self, reply: Reply) -> None:
        body = (
            reply.body
            if reply.body is not None
            else json.dumps(
                {"error": {"message": f"scripted status {reply.status}", "code": reply.status}}
            ).encode()
        )
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
