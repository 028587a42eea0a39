"""A loopback HTTP proxy in front of the moto S3 server that fails a share of requests the
way S3 does under load: what the retry tests (test_store_retries.py) run the store through.

    with s3_server() as s3, fault_proxy(s3.endpoint, share=1 / 3, seed=5) as proxy:
        uri = proxy.uri(s3, "run1")   # the same bucket, reached through the proxy

Each request is either forwarded to moto untouched or, with probability `share` (drawn from
a Random seeded with `seed`, in the order requests arrive), answered with one of `kinds`:
- "slowdown": 503 with S3's SlowDown XML body (what S3 answers when a prefix is too busy);
- "error500": 500 with S3's InternalError XML body;
- "reset": the connection closed with a TCP reset, no answer;
- "stall": no answer for `stall_s`, then the connection closed.
A faulted request never reaches moto, so a retry cannot apply it twice. `outage(s)` fails
every request with SlowDown for the next `s` seconds (a burst longer than a retry budget).
`counts` says what was done: "forwarded" and one entry per kind.
"""

from __future__ import annotations

import contextlib
import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KINDS = ("slowdown", "error500", "reset", "stall")
UPSTREAM_TIMEOUT_S = 30.0
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection"}
_ERROR_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
    "<Message>{message}</Message><RequestId>FAULTPROXY</RequestId></Error>"
)
_ANSWERS = {
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "error500": (500, "InternalError", "We encountered an internal error. Please try again."),
}


class FaultProxy(ThreadingHTTPServer):
    """The proxy's server: its fault settings, the seeded draw and the counts."""

    daemon_threads = True

    def __init__(
        self, upstream: str, share: float, kinds: tuple[str, ...], seed: int, stall_s: float
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {KINDS}")
        self.upstream, self.share, self.kinds, self.stall_s = upstream, share, kinds, stall_s
        self.counts: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._outage_until = 0.0

    @property
    def endpoint(self) -> str:
        """ "127.0.0.1:PORT", to put in a URI's endpoint_override."""
        return f"127.0.0.1:{self.server_address[1]}"

    def uri(self, s3: Any, prefix: str = "") -> str:
        """`s3.uri(prefix)` (tests.pipelines.s3_server.S3Server) reached through the proxy."""
        return str(s3.uri(prefix)).replace(s3.endpoint, self.endpoint)

    def outage(self, seconds: float) -> None:
        """Answer every request with SlowDown for the next `seconds`."""
        with self._lock:
            self._outage_until = time.monotonic() + seconds

    def draw(self) -> str:
        """What to do with the next request: "forwarded" or a fault kind; counted."""
        with self._lock:
            if time.monotonic() < self._outage_until:
                kind = "slowdown"
            elif self._random.random() < self.share:
                kind = self._random.choice(self.kinds)
            else:
                kind = "forwarded"
            self.counts[kind] += 1
            return kind

    def faults(self) -> int:
        """Requests answered with a fault so far."""
        with self._lock:
            return sum(n for kind, n in self.counts.items() if kind != "forwarded")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect
    server: FaultProxy

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet: a test's output should hold its own lines, not one per request."""

    def __getattr__(self, name: str) -> Any:
        # Every HTTP method (GET, PUT, POST, HEAD, DELETE, ...) is handled the same way.
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def _body(self) -> bytes:
        """The request body as sent, chunked framing included when it came chunked."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raw = b""
            while True:
                line = self.rfile.readline()
                raw += line
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:  # trailers, up to the empty line
                        trailer = self.rfile.readline()
                        raw += trailer
                        if trailer in (b"\r\n", b"\n", b""):
                            return raw
                raw += self.rfile.read(size + 2)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        body = self._body()
        kind = self.server.draw()
        if kind == "forwarded":
            self._forward(body)
        elif kind in _ANSWERS:
            status, code, message = _ANSWERS[kind]
            data = _ERROR_BODY.format(code=code, message=message).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        else:
            if kind == "stall":
                time.sleep(self.server.stall_s)
            # SO_LINGER 0: close() sends a reset rather than an orderly end.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True

    def _forward(self, body: bytes) -> None:
        host, port = self.server.upstream.rsplit(":", 1)
        upstream = http.client.HTTPConnection(host, int(port), timeout=UPSTREAM_TIMEOUT_S)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in {"connection", "keep-alive", "proxy-connection", "expect"}:
                    upstream.putheader(name, value)
            upstream.endheaders()
            if body:
                upstream.send(body)
            answer = upstream.getresponse()
            data = answer.read()
            self.send_response_only(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in _HOP_HEADERS | {"content-length"}:
                    self.send_header(name, value)
            # HEAD answers carry the object's length with no body: keep moto's.
            length = answer.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            upstream.close()


@contextlib.contextmanager
def fault_proxy(
    upstream: str,
    share: float = 1 / 3,
    kinds: tuple[str, ...] = KINDS,
    seed: int = 0,
    stall_s: float = 0.3,
) -> Iterator[FaultProxy]:
    """A FaultProxy on a free loopback port in front of `upstream` ("HOST:PORT"), serving
    from a thread until the block ends."""
    proxy = FaultProxy(upstream, share, kinds, seed, stall_s)
    thread = threading.Thread(target=proxy.serve_forever, name="fault-proxy", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(timeout=10)
