"""The view's HTTP side: GET (and HEAD) only, three paths, nothing written.

`/` the models page, `/samples?model=&task=&setup=&verdict=&q=&page=` one page of samples,
`/api/status` the models' figures as JSON for a script. Anything else is 404; any other
method 405. A handler error answers 500 with one line, never a traceback in the page."""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pipelines.view.live_results import LiveResults
from pipelines.view.pages import Filters, index_page, model_status, samples_page

log = logging.getLogger(__name__)


class ViewServer(ThreadingHTTPServer):
    """A threading HTTP server holding the live results and what the pages need."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], live: LiveResults, location: str, reload_s: int
    ) -> None:
        super().__init__(address, ViewHandler)
        self.live, self.location, self.reload_s = live, location, reload_s


class ViewHandler(BaseHTTPRequestHandler):
    """Answers the view's three paths."""

    server: ViewServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        """A page, with its body."""
        self._answer(send_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        """A page's headers only."""
        self._answer(send_body=False)

    def _refuse(self) -> None:
        self.send_error(HTTPStatus.METHOD_NOT_ALLOWED, "geosee view is read-only")

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

    def _answer(self, send_body: bool) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, max_num_fields=20)
        try:
            snapshot = self.server.live.snapshot()
            if parts.path == "/":
                body, kind = (
                    index_page(snapshot, self.server.location, self.server.reload_s),
                    "html",
                )
            elif parts.path == "/samples":
                page = _page_number((query.get("page") or ["1"])[0])
                body, kind = samples_page(snapshot, Filters.from_query(query), page), "html"
            elif parts.path == "/api/status":
                body, kind = json.dumps(_status_json(snapshot)), "json"
            else:
                self.send_error(HTTPStatus.NOT_FOUND)
                return
        except Exception as err:  # one line to the console and the page, the view goes on
            log.error(
                "view: %s failed: %s", parts.path, str(err).splitlines()[0] if str(err) else err
            )
            self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "the page could not be built")
            return
        data = body.encode("utf-8")
        self.send_response(HTTPStatus.OK)
        content = "text/html; charset=utf-8" if kind == "html" else "application/json"
        self.send_header("Content-Type", content)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if send_body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Requests go to the debug log, not the console."""
        log.debug("view: " + format, *args)  # requests are not console news


def _page_number(text: str) -> int:
    try:
        return max(1, min(int(text), 10**9))
    except ValueError:
        return 1


def _status_json(snapshot: Any) -> dict[str, Any]:
    models = [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in m.items()}
        for m in model_status(snapshot)
    ]
    return {"shards": snapshot.shards, "models": models, "unreadable": snapshot.unreadable}
