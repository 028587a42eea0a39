"""The http engine against a scripted loopback OpenAI server (127.0.0.1 only, no network)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from ray.data.block import BlockAccessor

from actors.contract import OUTPUT_COLUMNS, image_part, text_part
from actors.http_engine import MAX_BACKOFF_S, HTTPEngine, _retry_after_s, build_request
from geometry.answers import grammar_for, json_schema_for
from tests.actors.http_support import (
    ANSWER,
    KEY_ENV,
    POISON_OUTCOMES,
    fast_engine,
    make_batch,
)
from tests.actors.loopback_server import (
    LONG_TEXT_CHARS,
    POISON_KINDS,
    LoopbackServer,
    Reply,
    always,
    echo_last_text,
    fail_first,
    poisoned,
)


def test_429_once_then_success_is_retried() -> None:
    script = fail_first(1, 429, headers={"Retry-After": "0"})
    with LoopbackServer(script=script, answer=lambda r: '{"answer": "yes"}') as server:
        out = fast_engine(server.base_url)(make_batch(["q0"]))
    assert len(server.requests) == 2
    assert out["generated_text"][0] == '{"answer": "yes"}'
    assert out["engine_error"][0] is None
    assert out["num_input_tokens"][0] > 0 and out["num_generated_tokens"][0] == 2
    assert out["time_taken_llm"][0] > 0


def test_persistent_500_becomes_row_errors_after_retries() -> None:
    with LoopbackServer(then=always(500, body=b"upstream exploded")) as server:
        engine = fast_engine(server.base_url, "m", max_retries=2)
        out = engine(make_batch(["q0", "q1"]))
    assert len(server.requests) == 2 * 3
    assert list(out["generated_text"]) == [None, None]
    for error in out["engine_error"]:
        assert error == "transient: HTTP 500 after 3 attempts: upstream exploded"


def test_client_error_is_not_retried() -> None:
    with LoopbackServer(then=always(400, body=b"bad schema")) as server:
        out = fast_engine(server.base_url)(make_batch(["q0"]))
    assert len(server.requests) == 1
    assert out["engine_error"][0] == "final: HTTP 400 after 1 attempt: bad schema"


def test_dropped_connection_is_retried() -> None:
    with LoopbackServer(script=[Reply(drop=True)]) as server:
        out = fast_engine(server.base_url)(make_batch(["q0"]))
    assert len(server.requests) == 2
    assert out["generated_text"][0] == "q0" and out["engine_error"][0] is None


def test_unusable_url_is_a_row_error_not_a_raise() -> None:
    out = fast_engine("ftp://127.0.0.1:9/v1")(make_batch(["q0"]))
    assert out["engine_error"][0].startswith("final: UnsupportedProtocol after 1 attempt: ")


def test_one_failing_row_does_not_fail_the_batch() -> None:
    def decide(request: Mapping[str, Any], attempt: int) -> Reply | None:
        return Reply(422, body=b"nope") if "bad" in str(request["messages"]) else None

    with LoopbackServer(decide=decide) as server:
        out = fast_engine(server.base_url)(make_batch(["good0", "bad1", "good2"]))
    assert list(out["generated_text"]) == ["good0", None, "good2"]
    assert [e is None for e in out["engine_error"]] == [True, False, True]


def test_request_carries_schema_params_auth_and_clean_parts(api_key: str) -> None:
    with LoopbackServer() as server:
        engine = fast_engine(server.base_url, "my-model", api_key_env=KEY_ENV)
        engine(make_batch(["q0"], answer_type="choice", image=True))
    (seen,) = server.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {api_key}"
    body = seen.json
    assert body["model"] == "my-model"
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.0, 32, 7)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "schema": json_schema_for("choice", ["yes", "no"]),
            "strict": True,
        },
    }
    # OpenAI refuses unknown request fields: vLLM's structured_outputs is not sent.
    assert "structured_outputs" not in body
    user_parts = body["messages"][1]["content"]
    # Arrow's None-filled keys are gone; the image part passes through untouched.
    assert user_parts == [image_part(b"\x89PNG fake"), text_part("q0")]


def test_row_without_answer_type_is_sent_unconstrained() -> None:
    batch = make_batch(["q0"])
    del batch["answer_type"], batch["options"]
    with LoopbackServer() as server:
        out = fast_engine(server.base_url)(batch)
    assert "response_format" not in server.requests[0].json
    assert out["generated_text"][0] == "q0"


def test_outputs_keep_inputs_order_and_missing_usage_is_zero() -> None:
    batch = make_batch([f"q{i}" for i in range(5)])
    with LoopbackServer(then=Reply(usage=False)) as server:
        out = fast_engine(server.base_url, "m", max_concurrency=4)(batch)
    assert set(batch) | set(OUTPUT_COLUMNS) == set(out)
    assert list(out["request_key"]) == [f"k{i}" for i in range(5)]
    assert list(out["generated_text"]) == [f"q{i}" for i in range(5)]
    assert out["num_input_tokens"].tolist() == [0] * 5
    assert out["num_generated_tokens"].dtype == np.int64


def test_output_batch_converts_back_to_arrow_structs() -> None:
    # Ray pickles columns it cannot convert; Parquet/polars then cannot read them as structs.
    with LoopbackServer() as server:
        out = fast_engine(server.base_url)(make_batch(["q0", "q1"], image=True))
    table = BlockAccessor.batch_to_block(out)
    assert pa.types.is_list(table.schema.field("messages").type)
    assert pa.types.is_struct(table.schema.field("sampling_params").type)
    assert table.column("messages").to_pylist()[0][1]["content"][1]["text"] == "q0"


def test_concurrency_is_bounded() -> None:
    with LoopbackServer(then=Reply(delay_s=0.05)) as server:
        engine = fast_engine(server.base_url, "m", max_concurrency=3)
        out = engine(make_batch([f"q{i}" for i in range(12)]))
    assert len(server.requests) == 12
    assert 2 <= server.max_in_flight <= 3
    assert all(e is None for e in out["engine_error"])


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("2", 2.0),
        ("0", 0.0),
        ("7.5", 7.5),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a past date: at once
        # Not sane (issue 26: these gave no backoff at all): the engine's own backoff.
        ("-3", None),
        ("nan", None),
        ("inf", None),
        ("1e400", None),
        ("soon", None),
        ("Wed, 99 Foo 2015", None),
    ],
)
def test_retry_after_parsing(header: str | None, expected: float | None) -> None:
    assert _retry_after_s(header) == expected


def test_waits_honour_retry_after_cap_and_seeded_jitter() -> None:
    engine = HTTPEngine("http://127.0.0.1:9/v1", "m", backoff_s=1.0)
    assert engine._wait_s(0, 3.0, "k") == 3.0
    assert engine._wait_s(0, 10_000.0, "k") == MAX_BACKOFF_S
    waits = [engine._wait_s(a, None, "k") for a in range(3)]
    assert waits == [engine._wait_s(a, None, "k") for a in range(3)]  # seeded: repeatable
    for attempt, wait in enumerate(waits):
        assert 2**attempt <= wait <= 1.1 * 2**attempt
    assert engine._wait_s(20, None, "k") == MAX_BACKOFF_S


def test_retry_after_header_is_waited_for() -> None:
    script = fail_first(1, 503, headers={"Retry-After": "0.3"})
    with LoopbackServer(script=script) as server:
        started = time.perf_counter()
        out = fast_engine(server.base_url)(make_batch(["q0"]))
    assert time.perf_counter() - started >= 0.3
    assert out["generated_text"][0] == "q0"


@pytest.mark.parametrize("answer_type", ["choice", "number", "point"])
def test_grammar_mode_sends_the_rows_bounded_grammar_alone(answer_type: str) -> None:
    with LoopbackServer() as server:
        engine = fast_engine(server.base_url, "tiny", constraint="grammar")
        out = engine(make_batch(["q0"], answer_type=answer_type))
    assert out["engine_error"][0] is None
    body = server.requests[0].json
    options = ["yes", "no"] if answer_type == "choice" else []
    assert body["structured_outputs"] == {"grammar": grammar_for(answer_type, options)}
    # Bounded: optional single spaces, never a whitespace loop the model can stay in.
    assert body["structured_outputs"]["grammar"].endswith('ws ::= " "?')
    # vLLM refuses a request with two constraint kinds (grammar and a JSON schema).
    assert "response_format" not in body
    assert (body["model"], body["temperature"], body["max_tokens"], body["seed"]) == (
        "tiny",
        0.0,
        32,
        7,
    )


def test_grammar_mode_drops_arrow_null_keys_of_mixed_constraints() -> None:
    # Rows with different constraint kinds: through Arrow every row gets the union of keys,
    # and vLLM would count a None-valued `json` next to `grammar` as a second constraint.
    schema = {"type": "object"}
    rows = [
        {
            "messages": [{"role": "user", "content": f"q{i}"}],
            "sampling_params": {"max_tokens": 8, "structured_outputs": structured},
        }
        for i, structured in enumerate([{"grammar": 'root ::= "x"'}, {"json": schema}])
    ]
    batch = BlockAccessor.for_block(pa.Table.from_pylist(rows)).to_numpy()
    assert isinstance(batch, dict)
    assert batch["sampling_params"][0]["structured_outputs"]["json"] is None  # the Arrow union
    with LoopbackServer() as server:
        fast_engine(server.base_url, constraint="grammar")(batch)
    sent = sorted((r.json for r in server.requests), key=lambda b: str(b["messages"]))
    assert [b["structured_outputs"] for b in sent] == [
        {"grammar": 'root ::= "x"'},
        {"json": schema},
    ]


def test_grammar_mode_derives_a_missing_grammar_and_leaves_untyped_rows_free() -> None:
    typed = build_request("m", [], {"max_tokens": 8}, "number", [], "grammar")
    assert typed["structured_outputs"] == {"grammar": grammar_for("number")}
    untyped = build_request("m", [], {"max_tokens": 8}, None, None, "grammar")
    assert "structured_outputs" not in untyped and "response_format" not in untyped


def test_unknown_constraint_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'regex'.*json_schema, grammar"):
        HTTPEngine("http://127.0.0.1:9/v1", "m", constraint="regex")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'regex'"):
        build_request("m", [], {}, "number", [], "regex")  # type: ignore[arg-type]


def test_http_stage_passes_the_configs_constraint_to_the_engine(ray_local: Any) -> None:
    from pipelines.engines.models.model_schema import ModelConfig
    from pipelines.engines.stages.engine_stages import http_stage
    from pipelines.engines.stages.options import EngineOptions

    class Recorder:
        kwargs: dict[str, Any] = {}

        def map_batches(self, fn: Any, **kwargs: Any) -> Recorder:
            self.kwargs = kwargs
            return self

    modes: list[str] = []
    for mode in ("json_schema", "grammar"):
        cfg = ModelConfig(
            name="served",
            repo="tiny",
            engine="http",
            api_base="http://127.0.0.1:9/v1",
            api_key_env="PATH",  # any variable that is set: the stage reads it at build time
            api_constraint=mode,  # type: ignore[arg-type]
        )
        recorder = Recorder()
        http_stage(recorder, cfg, EngineOptions())
        modes.append(recorder.kwargs["fn_constructor_kwargs"]["constraint"])
    assert modes == ["json_schema", "grammar"]
    assert ModelConfig(name="x", repo="r").api_constraint == "json_schema"


def test_error_kinds_tag_what_a_rerun_may_fix() -> None:
    """The tag finished_keys reads: unreachable servers and 429/5xx are transient, a
    refused request is final, and a malformed row is final."""
    with LoopbackServer() as server:
        url = server.base_url
    # The server is gone: the port refuses connections.
    refused = fast_engine(url, max_retries=1)(make_batch(["q"]))["engine_error"][0]
    assert refused.startswith("transient: ConnectError after 2 attempts: ")
    with LoopbackServer(then=always(429, headers={"Retry-After": "0"})) as server:
        limited = fast_engine(server.base_url, max_retries=0)(make_batch(["q"]))
    assert limited["engine_error"][0].startswith("transient: HTTP 429 after 1 attempt")
    with LoopbackServer(then=always(401)) as server:
        denied = fast_engine(server.base_url)(make_batch(["q"]))
    assert denied["engine_error"][0].startswith("final: HTTP 401 after 1 attempt")
    bad = make_batch(["q"])
    bad["sampling_params"][0] = "not a mapping"
    with LoopbackServer() as server:
        out = fast_engine(server.base_url)(bad)
    assert out["engine_error"][0].startswith("final: bad row: ") and server.requests == []


def test_each_poisoned_reply_costs_its_row_only() -> None:
    """Issue 26: one poisoned reply in fifty failed every row of every rerun. Each class
    in one batch: every row ends as its rule says, and the batch still becomes Arrow."""
    assert set(POISON_OUTCOMES) == set(POISON_KINDS)
    kinds = [*POISON_KINDS, "healthy"]

    def decide(request: Mapping[str, Any], attempt: int) -> Reply | None:
        kind = echo_last_text(request)
        return None if kind == "healthy" else poisoned(kind, ANSWER)

    with LoopbackServer(decide=decide, answer=lambda r: ANSWER) as server:
        out = fast_engine(server.base_url, max_retries=2, max_concurrency=4)(make_batch(kinds))
    for kind, text, error in zip(kinds, out["generated_text"], out["engine_error"], strict=True):
        expected = POISON_OUTCOMES.get(kind)
        if expected is None:
            assert error is None and isinstance(text, str), (kind, error)
            text.encode("utf-8")  # encodable: the writer would raise otherwise
            assert text.startswith(ANSWER) or kind == "lone_surrogate", (kind, text[:50])
        else:
            assert text is None and error.startswith(expected), (kind, error)
            assert len(error) < 400, kind
    by_kind = dict(zip(kinds, range(len(kinds)), strict=True))
    assert out["generated_text"][by_kind["lone_surrogate"]] == ANSWER + "\ufffd"
    cut = out["generated_text"][by_kind["long_text"]]
    total = len(ANSWER) + LONG_TEXT_CHARS
    assert cut.endswith(f"[geosee: reply cut at 100000 of {total} characters]")
    assert len(cut) < 100_100
    tokens = dict(zip(kinds, out["num_input_tokens"].tolist(), strict=True))
    assert out["num_input_tokens"].dtype == np.int64
    for kind in ("tokens_beyond_int64", "nan_usage", "inf_usage", "negative_usage"):
        assert tokens[kind] == 0, kind
    assert tokens["healthy"] > 0 and tokens["lone_surrogate"] == 3
    table = BlockAccessor.batch_to_block(out)
    assert table.num_rows == len(kinds)
    assert table.schema.field("num_input_tokens").type == pa.int64()


def test_a_trickling_or_hung_server_costs_a_row_its_deadline_only() -> None:
    """Issue 26: a server trickling bytes held a row 1,085 s, a hung one 794 s per batch.
    The row's deadline covers every attempt and wait; the error is transient (a rerun may
    find the server well) and names the deadline. Work, not time, is asserted."""

    def decide(request: Mapping[str, Any], attempt: int) -> Reply | None:
        kind = echo_last_text(request)
        if kind == "trickle":
            return Reply(trickle_s=0.05)
        return Reply(delay_s=20.0) if kind == "hung" else None

    with LoopbackServer(decide=decide, lifetime_s=60) as server:
        engine = HTTPEngine(server.base_url, "m", backoff_s=0.001, deadline_s=1.0)
        out = engine(make_batch(["trickle", "hung", "fine"]))
        by_prompt = {echo_last_text(r.json): 0 for r in server.requests}
    trickle, hung, fine = out["engine_error"]
    assert trickle.startswith("transient: reply too slow after 1 attempt: ")
    assert "the row's deadline of 1 s" in trickle
    assert hung.startswith("transient: ReadTimeout after 1 attempt")
    assert "the row's deadline of 1 s" in hung
    assert fine is None and out["generated_text"][2] == "fine"
    assert set(by_prompt) == {"trickle", "hung", "fine"}
