"""Issue 38: the API key in no form in anything `evaluate --engine http` writes.

One run against a loopback server that echoes the key back in every form a server, a proxy
or the HTTP library might (raw, another case, Python's repr, JSON escapes, URL, base64,
HTML), in error bodies and in completions, with the key's variable ending in a CRLF as an
env file gives it. Every file the run wrote (shards, sample logs, results JSON, Ray's logs
of this run) and its stderr are read back and searched for each form.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl
import pytest

from actors.http_redact import base64_runs
from pipelines.cli import main
from tests.actors.loopback_server import LoopbackServer, Reply

KEY_ENV = "GEOSEE_LEAK_TEST_KEY"
# A backslash, a quote and a slash: Python's repr and JSON each write this key differently
# from the key itself, so a redactor that knows only the raw key misses those forms.
KEY = "sk-leak\\te'st/9f8e7d6c5b4a3210"
TAIL = "9f8e7d6c5b4a3210"  # in every form that leaves the key's digits readable

ECHOES: dict[str, Any] = {
    "raw": lambda k: k,
    "upper": lambda k: k.upper(),
    "repr": repr,
    "repr-header-bytes": lambda k: f"Illegal header value {f'Bearer {k}'.encode()!r}",
    "json": json.dumps,
    "json-in-json": lambda k: json.dumps(json.dumps(k)),
    "json-u-escapes": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "json-u-mixed": lambda k: "".join(f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(k)),
    "url": lambda k: quote(k, safe=""),
    "url-all": lambda k: "".join(f"%{ord(c):02x}" for c in k),
    "base64-header": lambda k: base64.b64encode(f"Authorization: Bearer {k}".encode()).decode(),
    "html": lambda k: "".join(f"&#{ord(c)};" for c in k),
}


def _forms() -> list[str]:
    return [echo(KEY) for echo in ECHOES.values()]


def _answer(request: Mapping[str, Any]) -> str:
    schema = request["response_format"]["json_schema"]["schema"]["properties"]["answer"]
    return json.dumps({"answer": schema["enum"][0] if "enum" in schema else 1})


def _config(path: Path, base_url: str) -> Path:
    path.write_text(
        "name: api-model\nrepo: gpt-test\nengine: http\nmodality: text\nsetups: [text]\n"
        f"api_base: {base_url}\napi_key_env: {KEY_ENV}\n"
    )
    return path


def _texts(folder: Path, since: float) -> dict[Path, str]:
    """Every file under `folder` changed since `since`, as text: Parquet shards as their
    rows (their pages are compressed, so their bytes would hide a key), others decoded."""
    found = {}
    for path in folder.rglob("*"):
        if not path.is_file() or path.stat().st_mtime < since:
            continue
        if path.suffix == ".parquet":
            found[path] = str(pl.read_parquet(path).to_dicts())
        else:
            found[path] = path.read_bytes().decode("utf-8", "replace")
    return found


def test_no_form_of_the_key_reaches_any_file_or_stderr(
    small_items: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import ray

    monkeypatch.setenv(KEY_ENV, f"  {KEY}\r\n")  # an env file with CRLF line ends
    assigned: dict[str, int] = {}
    lock = threading.Lock()
    forms = _forms()

    def echo(request: Mapping[str, Any], attempt: int) -> Reply:
        # Row n echoes form n // 2: in an error body (final, stored) or in the answer text.
        with lock:
            n = assigned.setdefault(json.dumps(request["messages"]), len(assigned))
        form = forms[(n // 2) % len(forms)]
        if n % 2:
            return Reply(text=f"your key was {form}; {_answer(request)}")
        return Reply(401, body=json.dumps({"error": f"bad key {form}"}).encode())

    out, samples = tmp_path / "results", tmp_path / "samples"
    started = time.time() - 1
    with LoopbackServer(answer=_answer, decide=echo) as server:
        cfg = _config(tmp_path / "api-model.yaml", server.base_url)
        args = ["evaluate", "--items", str(small_items), "--engine", "http", "--model", str(cfg)]
        args += ["--tasks", "N-ECL-SLT,U-PAP-PT", "--setups", "text", "--per-task", "12"]
        args += ["--max-error-rate", "1", "--log-level", "DEBUG"]
        assert main([*args, "--log-samples", str(samples), "--out", str(out)]) == 0
        headers = {r.headers["authorization"] for r in server.requests}
    assert headers == {f"Bearer {KEY}"}  # stripped before it was sent
    captured = capsys.readouterr()
    assert captured.err.count("had whitespace around the key") == 1

    written = _texts(tmp_path, started)
    logs = Path(ray._private.worker._global_node.get_logs_dir_path())
    written.update(_texts(logs, started))
    shards = [p for p in written if p.suffix == ".parquet"]
    assert shards and any(p.suffix == ".jsonl" for p in written)
    rows = pl.concat([pl.read_parquet(p) for p in shards], how="diagonal_relaxed")
    assert rows.height == 24  # every form in both places
    stored = str(rows["engine_error"].to_list()) + str(rows["generated_text"].to_list())
    assert stored.count("[REDACTED]") >= 24, stored  # the echoes reached the rows, redacted
    places = {**{str(p): t for p, t in written.items()}, "stdout": captured.out}
    places["stderr"] = captured.err
    needles = [*forms, TAIL, KEY.lower(), *base64_runs(KEY.encode())]
    found = [(place, n) for place, text in places.items() for n in needles if n in text]
    assert found == []


@pytest.mark.parametrize("value", ["sk-inner space", "sk-inner\ttab", "sk-\x00nul", "sk-é"])
def test_a_key_with_whitespace_or_control_characters_inside_is_refused_before_anything(
    small_items: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, value.replace("\x00", "\x01"))  # env values cannot hold NUL
    cfg = _config(tmp_path / "api-model.yaml", "http://127.0.0.1:9/v1")
    out = tmp_path / "results"
    args = ["evaluate", "--items", str(small_items), "--engine", "http", "--model", str(cfg)]
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"${KEY_ENV}" in err and "inside the key" in err
    assert "sk-" not in err and not out.exists()
    assert os.environ[KEY_ENV] not in err


@pytest.mark.parametrize("value", [None, "sk-inner space"])
def test_geobuild_refuses_a_missing_or_unusable_key_before_anything(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str | None,
) -> None:
    from tests.conftest import SHARED

    if value is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, value)
    cfg = _config(tmp_path / "api-model.yaml", "http://127.0.0.1:9/v1")
    out = tmp_path / "results"
    args = ["geobuild", "--dataset", str(SHARED / "geobuildbench"), "--engine", "http"]
    assert main([*args, "--model", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"${KEY_ENV}" in err and not out.exists()
    assert "inner" not in err
