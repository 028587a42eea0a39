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

`poisoned(kind, text)` gives the reply of each class of hostile or broken server that
issue 26 found (POISON_KINDS): text that is not encodable as UTF-8, token counts beyond
int64 or not finite, wrong types, missing choices, huge replies, bodies that are empty,
HTML or not UTF-8, and more.
"""

from __future__ import annotations

import contextlib
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
    trickle_s: float = 0.0  # > 0: the body goes one byte at a time, this long apart


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
        # Only a safety net for a server a test forgets to stop: on a loaded machine a Ray
        # run outlasts 30 s (measured: 476 s at load 50), and a server gone mid-run turns
        # answered rows into connection errors.
        lifetime_s: float = 600.0,
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
                body = owner._completion(request, reply)
                reply = Reply(200, body=body, headers=reply.headers, trickle_s=reply.trickle_s)
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
        if not any(name.lower() == "content-type" for name in reply.headers):
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        # A client may stop reading (a body over its limit, its deadline): not an error here.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if not reply.trickle_s:
                self.wfile.write(body)
                return
            for i in range(len(body)):
                if self.owner._stopped.is_set():
                    return
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(reply.trickle_s)


def completion_body(text: Any, usage: Any = None, **fields: Any) -> bytes:
    """A chat completion's JSON bytes with `text` as the assistant content, `usage` as
    given (None: left out) and any top-level `fields` replaced; NaN and inf are written as
    JSON's NaN and Infinity, lone surrogates as escapes (as json.dumps does)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-poison",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    body.update(fields)
    return json.dumps(body).encode()


# The body the engine must refuse to read whole (actors.http_reply.MAX_BODY_BYTES is 8 MiB).
HUGE_BODY_BYTES = 8 * 1024 * 1024 + 1
# The text the engine must store cut (actors.http_reply.MAX_TEXT_CHARS is 100,000).
LONG_TEXT_CHARS = 100_000 + 50
RETRY_AT_ONCE = {"Retry-After": "0"}  # transient replies: retried without backoff time


def _usage(prompt: Any, completion: Any = 1) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": 1}


def poisoned(kind: str, text: str) -> Reply:
    """The reply of one POISON_KINDS class; `text` is a right answer where the class keeps
    one (bad usage, a lone surrogate appended, text past the cap)."""
    json_body: dict[str, Callable[[], bytes]] = {
        "lone_surrogate": lambda: completion_body(text + "\ud800", _usage(3)),
        "tokens_beyond_int64": lambda: completion_body(text, _usage(2**70, 2**64)),
        "nan_usage": lambda: completion_body(text, _usage(float("nan"), float("nan"))),
        "inf_usage": lambda: completion_body(text, _usage(float("inf"), float("-inf"))),
        "negative_usage": lambda: completion_body(text, _usage(-5, -1)),
        "usage_wrong_types": lambda: completion_body(text, _usage("12", [1])),
        "usage_not_an_object": lambda: completion_body(text, "lots"),
        "long_text": lambda: completion_body(text + " " * LONG_TEXT_CHARS, _usage(3)),
        "content_a_number": lambda: completion_body(42, _usage(3)),
        "content_a_list": lambda: completion_body([{"type": "text", "text": text}], _usage(3)),
        "refusal": lambda: json.dumps(
            {"choices": [{"message": {"content": None, "refusal": "I will not"}}]}
        ).encode(),
        "missing_choices": lambda: json.dumps({"id": "x", "usage": _usage(3)}).encode(),
        "empty_choices": lambda: completion_body(text, choices=[]),
        "choices_a_string": lambda: completion_body(text, choices="many"),
        "message_missing": lambda: completion_body(text, choices=[{"index": 0}]),
        "json_array": lambda: b"[1, 2, 3]",
        "nested_too_deep": lambda: b"[" * 200_000 + b"]" * 200_000,
        "digits_beyond_parser": lambda: (
            completion_body(text)[:-1] + b', "n": ' + b"9" * 5000 + b"}"
        ),
        # Issue 38: a count Python will not convert (over 4,300 digits) cost the answer.
        "usage_5000_digits": lambda: completion_body(text, _usage(7)).replace(
            b'"prompt_tokens": 7', b'"prompt_tokens": ' + b"9" * 5000
        ),
        "bom_before_body": lambda: b"\xef\xbb\xbf" + completion_body(text, _usage(3)),
        "not_utf8": lambda: completion_body("caf").replace(b"caf", b"caf\xe9\xff"),
        "not_json": lambda: b"{'choices': oops",
        "huge_body": lambda: b" " * HUGE_BODY_BYTES,
    }
    if kind in json_body:
        return Reply(200, body=json_body[kind]())
    transient: dict[str, Reply] = {
        "empty_body": Reply(200, body=b"", headers=RETRY_AT_ONCE),
        "html_page": Reply(
            200,
            body=b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
            headers={"Content-Type": "text/html", **RETRY_AT_ONCE},
        ),
        "status_408": Reply(408, headers=RETRY_AT_ONCE),
        "status_409": Reply(409, headers=RETRY_AT_ONCE),
        "status_425": Reply(425, headers=RETRY_AT_ONCE),
    }
    return transient[kind]


POISON_KINDS = (
    "lone_surrogate", "tokens_beyond_int64", "nan_usage", "inf_usage", "negative_usage",
    "usage_wrong_types", "usage_not_an_object", "long_text", "content_a_number",
    "content_a_list", "refusal", "missing_choices", "empty_choices", "choices_a_string",
    "message_missing", "json_array", "nested_too_deep", "digits_beyond_parser", "not_utf8",
    "not_json", "huge_body", "empty_body", "html_page", "status_408", "status_409",
    "status_425", "usage_5000_digits", "bom_before_body",
)  # fmt: skip
