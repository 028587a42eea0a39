"""The http engine's API key: sent in its header and nowhere else (rows, errors, logs, repr),
stripped or refused in one line, handed to the actors by object ref only, and redacted from
any server or library text that echoes it, in any case or common encoding.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import pytest

from actors.api_key import BadKeyError
from actors.http_engine import HTTPEngine
from actors.http_redact import base64_runs
from tests.actors.http_support import (
    KEY,
    KEY_ENV,
    _recorded_stage,
    fast_engine,
    make_batch,
)
from tests.actors.loopback_server import (
    LoopbackServer,
    Reply,
    always,
    echo_last_text,
)


def test_key_never_leaks(
    api_key: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    # A hostile server echoes the key in an error body and in the assistant text.
    def decide(request: Mapping[str, Any], attempt: int) -> Reply | None:
        if "q0" in str(request["messages"]):
            return Reply(500, body=f"auth was Bearer {api_key}".encode())
        return Reply(text=f"my key is {api_key}")

    caplog.set_level(logging.DEBUG)
    with LoopbackServer(decide=decide) as server:
        engine = fast_engine(server.base_url, "m", api_key_env=KEY_ENV, max_retries=1)
        out = engine(make_batch(["q0", "q1"]))
    assert out["engine_error"][0].startswith(
        "transient: HTTP 500 after 2 attempts: auth was Bearer "
    )
    assert out["generated_text"][1].startswith("my key is ")
    captured = capsys.readouterr()
    for place in (str({k: v.tolist() for k, v in out.items()}), repr(engine), str(vars(engine))):
        assert api_key not in place
    assert api_key not in caplog.text + captured.out + captured.err


@pytest.mark.parametrize("around", ["\n", "\r\n", "\t", "  "])
def test_whitespace_around_the_key_is_stripped_before_it_is_sent(
    monkeypatch: pytest.MonkeyPatch, around: str
) -> None:
    # Issue 38: a trailing line end made the HTTP library refuse the header and print it.
    monkeypatch.setenv(KEY_ENV, f"{around}{KEY}{around}")
    with LoopbackServer() as server:
        out = fast_engine(server.base_url, api_key_env=KEY_ENV)(make_batch(["q"]))
    assert out["engine_error"][0] is None and out["generated_text"][0] == "q"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("inside", [" ", "\t", "\n", "\x7f", "\u00e9"])
def test_a_key_with_a_character_no_header_carries_is_refused_without_the_key(
    monkeypatch: pytest.MonkeyPatch, inside: str
) -> None:
    monkeypatch.setenv(KEY_ENV, f"sk-secret{inside}tail")
    with pytest.raises(BadKeyError, match=f"\\${KEY_ENV} holds .* at character 10 of 14") as err:
        HTTPEngine("http://127.0.0.1:9/v1", "m", api_key_env=KEY_ENV)
    assert "secret" not in str(err.value)


def test_missing_env_var_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(RuntimeError, match=KEY_ENV):
        HTTPEngine("http://127.0.0.1:9/v1", "m", api_key_env=KEY_ENV)


def test_http_stage_hands_the_key_over_by_object_ref_only(
    ray_local: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = _recorded_stage(monkeypatch, KEY)
    # Nothing Ray logs (runtime env) or pickles into task specs (arguments) holds the key.
    assert "runtime_env" not in recorded
    kwargs = recorded["fn_constructor_kwargs"]
    ref = kwargs.pop("api_key_ref")
    assert KEY not in repr(kwargs) + repr(ref)
    assert isinstance(ref, ray_local.ObjectRef) and ray_local.get(ref) == KEY.encode()
    # A worker without the variable (started before it was exported) takes the ref's key.
    monkeypatch.delenv(KEY_ENV)
    with LoopbackServer(answer=lambda r: '{"answer": "yes"}') as server:
        engine = HTTPEngine(server.base_url, "m", api_key_env=KEY_ENV, api_key_ref=ref)
        engine(make_batch(["q0"]))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_workers_own_variable_wins_over_the_ref(
    ray_local: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = ray_local.put(b"sk-from-driver")
    monkeypatch.setenv(KEY_ENV, "sk-node-local")
    with LoopbackServer(answer=lambda r: '{"answer": "yes"}') as server:
        HTTPEngine(server.base_url, "m", api_key_env=KEY_ENV, api_key_ref=ref)(make_batch(["q"]))
    assert server.requests[0].headers["authorization"] == "Bearer sk-node-local"


def test_http_stage_without_the_key_refuses_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipelines.engines.stages.engine_stages import MissingKeyError

    with pytest.raises(MissingKeyError, match=f"\\${KEY_ENV}, which is not set; export"):
        _recorded_stage(monkeypatch, None)


@pytest.mark.parametrize(
    "echo",
    [
        lambda k: k.upper(),
        lambda k: k.swapcase(),
        lambda k: "Authorization: Bearer " + k,
        lambda k: quote(k, safe=""),
        lambda k: "".join(f"%{ord(c):02x}" for c in k),  # every character escaped
        lambda k: base64.b64encode(k.encode()).decode(),
        lambda k: base64.b64encode(f"Authorization: Bearer {k}".encode()).decode(),
        lambda k: base64.urlsafe_b64encode(f"x{k}yz".encode()).decode(),
        lambda k: base64.b64encode(f"ab{k}".encode()).decode(),
        lambda k: "".join(f"\\u{ord(c):04x}" for c in k),  # JSON escapes, as an error body's
        lambda k: "".join(f"\\u{ord(c):04X}" if i % 3 else c for i, c in enumerate(k)),
        lambda k: repr(f"Bearer {k}\n".encode()),  # the HTTP library's refused header
        lambda k: "".join(f"&#x{ord(c):x};" for c in k),
    ],
    ids=[
        *("upper", "swapcase", "bearer", "url", "url-all", "b64", "b64-header", "b64-url"),
        *("b64-2", "json-u", "json-u-mixed", "repr", "html"),
    ],
)
def test_the_key_is_redacted_in_any_case_and_common_encodings(
    api_key: str, capsys: pytest.CaptureFixture[str], echo: Any
) -> None:
    echoed = echo(api_key)

    def decide(request: Mapping[str, Any], attempt: int) -> Reply | None:
        if echo_last_text(request) == "q0":
            return Reply(401, body=f"bad credentials: {echoed}".encode())
        return Reply(text=f"you sent {echoed} ok")

    with LoopbackServer(decide=decide) as server:
        engine = fast_engine(server.base_url, "m", api_key_env=KEY_ENV)
        out = engine(make_batch(["q0", "q1"]))
    written = str(out["engine_error"].tolist()) + str(out["generated_text"].tolist())
    assert "[REDACTED]" in out["engine_error"][0] and "[REDACTED]" in out["generated_text"][1]
    assert echoed not in written and api_key.lower() not in written.lower()
    for encoded in base64_runs(api_key.encode()):
        assert encoded not in written
    assert echoed not in capsys.readouterr().err


def test_an_excerpt_never_cuts_the_key_in_half(api_key: str) -> None:
    """Redaction comes before the 200-character excerpt: cut first, a key straddling the
    cut would leave its first characters in the row."""
    body = ("x" * 190 + " " + api_key).encode()
    with LoopbackServer(then=always(400, body=body)) as server:
        out = fast_engine(server.base_url, api_key_env=KEY_ENV)(make_batch(["q"]))
    error = out["engine_error"][0]
    assert error.startswith("final: HTTP 400 after 1 attempt: xxx") and api_key[:8] not in error
