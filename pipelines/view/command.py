"""`geosee view RESULTS`: serve the live results page until Ctrl-C."""

from __future__ import annotations

import argparse

from pipelines.command_line.args import int_in, results_location
from pipelines.view.live_results import BENCHMARK, LiveResults
from pipelines.view.server import ViewServer
from store.errors import UsageError
from store.storage import Location

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `view` command's options."""
    parser.add_argument(
        "results", type=results_location, help="results directory (or URI) given to --out"
    )
    parser.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; the page is "
        "read-only but shows prompts and answers)",
    )  # fmt: skip
    parser.add_argument(
        "--port", type=int_in(0, 65535), default=DEFAULT_PORT, help="port (0: any free one)"
    )
    parser.add_argument(
        "--refresh", type=int_in(0, 3600), default=5, metavar="SECONDS",
        help="how often the store is listed for new shards and the models page reloads "
        "(0: the store on every request)",
    )  # fmt: skip


def shown_location(results: Location | str) -> str:
    """The location as the page names it, without any user:password in a URI."""
    text = str(results)
    scheme, sep, rest = text.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = rest.split("@", 1)[1]
    return f"{scheme}{sep}{rest}"


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 2 when the location cannot be read at all."""
    live = LiveResults(args.results, refresh_s=args.refresh)
    location = shown_location(args.results)
    snapshot = live.snapshot()  # a location that cannot be listed fails here, before serving
    try:
        server = ViewServer((args.host, args.port), live, location, max(args.refresh, 1))
    except OSError as err:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {err.strerror}") from err
    host, port = str(server.server_address[0]), int(server.server_address[1])
    if not snapshot.rows.height:
        print(f"no result rows under {location}/{BENCHMARK} yet: the page fills as shards land")
    print(f"serving {location} at http://{host}:{port}/ (read-only; Ctrl-C ends)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
