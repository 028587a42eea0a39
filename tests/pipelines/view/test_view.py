"""`geosee view`: a running server sees shards land without a restart, filters samples by
verdict and text, shows markup as text, lists unreadable shards and leaves them in place.

Shards are written by the real writer (ShardWriter) in the real layout; the figures the
pages show are recomputed here from the rows written (Wilson's interval from its formula,
not scipy). Pages are read in headless Chromium (as the report's test reads the report)
and over plain HTTP for the JSON."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.noregeo.results import ShardWriter
from pipelines.view.command import shown_location
from pipelines.view.live_results import LiveResults
from pipelines.view.pages import model_status
from store.records import model_dir
from store.storage import Location, location
from tests.conftest import REPO
from tests.pipelines.s3_server import S3Server, s3_fixture  # noqa: F401  (the fixture `s3`)

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ODD_MODEL = "m2<script>alert(1)</script>"  # a name holding markup must render as text

# verdict -> the row fields that make it (pipelines.noregeo.sample_log.verdict's rules)
FIELDS = {
    "right": {"valid": True, "correct": True, "engine_error": None},
    "wrong": {"valid": True, "correct": False, "engine_error": None},
    "invalid": {"valid": False, "correct": False, "engine_error": None},
    "unanswered": {"valid": False, "correct": False, "engine_error": "HTTP 503"},
}


def _rows(model: str, verdicts: list[str], start: int = 0) -> list[dict[str, Any]]:
    rows = []
    for i, verdict in enumerate(verdicts, start):
        rows.append(
            {
                "item_id": f"C-BCT-CT-{i:04d}",
                "task": "C-BCT-CT",
                "setup": "text",
                "prompt": f"Are the points collinear? case-{i}",
                "answer": json.dumps({"answer": "yes"}),
                "answer_type": "choice",
                "options": ["yes", "no"],
                "request_key": f"{model}-{i}",
                "sampling_params": {"temperature": 0.0},
                "generated_text": None if verdict == "unanswered" else '{"answer": "no"}',
                **FIELDS[verdict],
            }
        )
    return rows


def _write(results: Location, model: str, verdicts: list[str], start: int = 0) -> None:
    writer = ShardWriter(str(model_dir(results, "noregeo", model)), model, "main", "hf")
    assert writer.write_rows(_rows(model, verdicts, start)) == len(verdicts)


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)


@pytest.fixture
def view(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """`geosee view` on an empty results folder, listing the store on every request."""
    results = tmp_path / "results"
    results.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines", "view", str(results), "--port", "0", "--refresh", "0"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        found = re.search(r"at (http://127\.0\.0\.1:\d+/)", lines[1])
        assert "no result rows" in lines[0] and found, (lines, proc.stderr)
        yield results, found.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def _dom(tmp_path: Path, url: str) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout


def _status(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "api/status", timeout=30) as reply:
        return json.loads(reply.read())


def _model_row(dom: str, model: str) -> list[str]:
    row = re.search(rf'<tr data-model="{re.escape(model)}">(.*?)</tr>', dom, re.S)
    assert row is not None, dom[-3000:]
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row[1])]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_a_running_view_shows_new_shards_and_filters_samples(
    view: tuple[Path, str], tmp_path: Path
) -> None:
    results, url = view
    _write(results, "m1", ["right", "right", "wrong", "unanswered"])
    first = _dom(tmp_path, url)
    low, high = _wilson(2, 4)
    assert _model_row(first, "m1") == ["m1", "4", "-", "1", "0", "50.0", f"{low:.1f} - {high:.1f}"]
    assert "m2" not in first

    # A sweep goes on: more rows of m1, a new model; the same server, no restart.
    _write(results, "m1", ["right", "invalid"], start=4)
    _write(results, ODD_MODEL, ["wrong", "right", "invalid"])
    second = _dom(tmp_path, url)
    low, high = _wilson(3, 6)
    assert _model_row(second, "m1") == ["m1", "6", "-", "1", "1", "50.0", f"{low:.1f} - {high:.1f}"]
    escaped = "m2&lt;script&gt;alert(1)&lt;/script&gt;"
    assert escaped in second and "<script>" not in second  # text, never an element

    samples = _dom(tmp_path, url + "samples?verdict=invalid")
    shown = re.findall(r'<tr data-verdict="(\w+)">', samples)
    assert shown == ["invalid", "invalid"]  # m1's item 5 and m2's item 2, nothing else
    searched = _dom(tmp_path, url + "samples?model=m1&q=CASE-5")
    assert re.findall(r"C-BCT-CT-\d{4}", searched.split('id="samples"')[1]) == ["C-BCT-CT-0005"]


def test_an_unreadable_shard_is_listed_and_left_in_place(view: tuple[Path, str]) -> None:
    results, url = view
    _write(results, "m1", ["right", "wrong"])
    folder = model_dir(results, "noregeo", "m1") / "setup=text"
    good = next(folder.glob("part-*.parquet"))
    truncated = folder / "part-truncated.parquet"
    truncated.write_bytes(good.read_bytes()[:-40])
    other = folder / "part-other.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"request_key": [1, 2], "correct": ["yes", "no"]}), other)
    status = _status(url)
    assert [(m["model"], m["rows"], m["right"]) for m in status["models"]] == [("m1", 2, 1)]
    assert sorted(Path(p).name for p in status["unreadable"]) == [other.name, truncated.name]
    assert "not a result shard" in status["unreadable"][str(other)]
    assert truncated.exists() and other.exists()  # read-only: nothing moved to quarantine


def test_a_missing_location_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "view", str(tmp_path / "nowhere")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "nowhere" in done.stderr


def test_a_uri_s_credentials_never_reach_the_page() -> None:
    assert shown_location("s3://AKIAEXAMPLE:s3cr3t@bucket/run") == "s3://bucket/run"
    assert shown_location(Path("/data/results")) == "/data/results"


def test_shards_landing_in_s3_are_read_once_each(s3: S3Server) -> None:
    """The same reader on a store: a refresh reads only the shards it has not read."""
    results = location(s3.uri("view-run"))
    _write(results, "m1", ["right", "wrong", "unanswered"])
    live = LiveResults(results, refresh_s=0)
    assert [(m["model"], m["rows"], m["right"]) for m in model_status(live.snapshot())] == [
        ("m1", 3, 1)
    ]
    read = live._read
    calls: list[str] = []
    live._read = lambda shard: calls.append(str(shard)) or read(shard)  # type: ignore[method-assign]
    _write(results, "m1", ["right"], start=3)
    assert [(m["rows"], m["right"]) for m in model_status(live.snapshot())] == [(4, 2)]
    assert len(calls) == 1  # the new shard only
