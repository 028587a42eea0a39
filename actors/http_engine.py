"""The `http` engine: any OpenAI-compatible chat-completions server (API models, `vllm serve`).

A callable class for Ray Data `map_batches` over the shared row contract (actors/contract.py).
Each row becomes one POST {base_url}/chat/completions carrying the row's messages, its
sampling parameters and its answer constraint, in one of two forms (`constraint`):

- "json_schema" (default; OpenAI's API and most servers): a strict JSON-schema
  `response_format` derived from `answer_type` and `options` (geometry/answers.py). JSON
  schemas cannot bound whitespace, and vLLM's xgrammar backend allows any amount of it, so
  a weak model served by vLLM can write `{"answer"` and then tabs until `max_tokens`.
- "grammar" (vLLM's OpenAI server): the row's own bounded EBNF grammar as vLLM's
  request-level `structured_outputs` (`{"grammar": ...}`), exactly what the `vllm` engine
  gives the model. vLLM (0.29) merges a `response_format` into `structured_outputs` and
  refuses a request with two constraint kinds, so the grammar is sent alone.

Rows run concurrently, at most `max_concurrency` in flight. What a person would retry is
transient and retried with exponential backoff: 408, 409, 425, 429 and 5xx, an empty 200
body, an HTML page (a proxy's) instead of a completion, timeouts and connection errors.
Everything else is final: other statuses, and replies that break a rule of
actors/http_reply.py (every value taken from the server is checked there, where it enters).
A row that still fails gets `engine_error` and `generated_text` = None; the batch goes on.
Every error starts with its kind, `transient: ` (a later run may succeed, so
`store.records.finished_keys` lets a rerun retry the row) or `final: ` (repeating it gives
the same; `evaluate --retry-errors all` sends such rows again once the cause is fixed).

Each row has a deadline (`deadline_s`, ModelConfig.api_deadline_s, default
DEFAULT_DEADLINE_S) over all its attempts and waits: a server that trickles bytes or hangs
costs one row that long at most (a read in progress ends at the deadline too), and the row
is a transient error. A server's `Retry-After` is honoured when it is a finite number of
seconds >= 0 or an HTTP date, capped at MAX_BACKOFF_S; anything else (negative, NaN, inf,
garbage) falls back to the engine's own backoff.

The API key: the engine's own environment variable `api_key_env` if the worker has it (a
cluster whose nodes or image export it), else the value behind `api_key_ref`, a Ray object
the driver put in the object store (pipelines.engines.stages.engine_stages.http_stage).
Never a runtime-env variable or a constructor argument: Ray writes runtime envs to its logs
in plain text and constructor arguments into task specs. Whitespace around the key is
stripped and any inside refused (actors/api_key.py), so no header the HTTP library refuses
can print it. The key is never put into rows, logs, exceptions or repr; server text and the
HTTP library's error text that echo it, in any case or in its common encodings and escapes,
are redacted (actors/http_redact.py) before they land in a row.

With `request_cache` (a folder of the results store: store.request_cache), each answer is
kept there before its row is done, keyed by the row's `request_key` and the whole request
body, and a row whose answer is there already is answered from it without a request: a run
cut short is not paid for twice.
"""

from __future__ import annotations

import email.utils
import logging
import math
import os
import random
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import httpx
import numpy as np

from actors.api_key import checked_key
from actors.contract import ENGINE_OUTPUT, arrow_ready, check_columns, numpy_columns, plain
from actors.http_redact import Redactor
from actors.http_reply import (
    DEFAULT_DEADLINE_S,
    FINAL,
    MAX_BODY_BYTES,
    TRANSIENT,
    Failed,
    Retryable,
    check_status,
    clean_text,
    excerpt,
    read_completion,
)
from geometry.answers import grammar_for, json_schema_for
from store.request_cache import RequestCache, cache_key
from store.storage import location

logger = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("messages", "sampling_params")
MAX_BACKOFF_S = 60.0  # cap on one wait, whether from backoff or a server's Retry-After
JITTER_FRACTION = 0.1  # spreads retries of rows that failed together
__all__ = ["FINAL", "TRANSIENT", "HTTPEngine", "build_request"]
# How a row's answer constraint is sent (module docstring); ModelConfig.api_constraint.
Constraint = Literal["json_schema", "grammar"]
CONSTRAINTS: tuple[str, ...] = get_args(Constraint)


class _Secret:
    """Holds the key so that repr(), tracebacks with locals and pickles of state show no value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    def __reduce__(self) -> Any:
        raise TypeError("the API key is not picklable; each worker reads it from its env var")


@dataclass(frozen=True)
class _Result:
    text: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    prompt_ids_sha256: str | None = None


def _retry_after_s(header: str | None) -> float | None:
    """Seconds from a Retry-After header: a finite number >= 0 or an HTTP date (a past one
    is 0); None when absent or anything else (negative, NaN, inf, garbage)."""
    if not header:
        return None
    try:
        seconds = float(header)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def response_format_for(answer_type: Any, options: Any, sampling_params: Mapping[str, Any]) -> Any:
    """The `response_format` for a row: the answer schema, else a `json` structured output.

    Rows without an answer type (e.g. GeoBuild programs) and without a JSON schema in
    `structured_outputs` are sent unconstrained (None).
    """
    schema: Any
    if answer_type:
        schema = json_schema_for(str(answer_type), [str(o) for o in (plain(options) or [])])
    else:
        schema = (sampling_params.get("structured_outputs") or {}).get("json")
        if schema is None:
            return None
    spec = {"name": "answer", "schema": schema, "strict": True}
    return {"type": "json_schema", "json_schema": spec}


def structured_outputs_for(
    answer_type: Any, options: Any, sampling_params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """vLLM's request-level `structured_outputs` for a row: its own grammar (or JSON schema).

    The row's `structured_outputs` go as they are (Arrow's None-filled keys dropped: vLLM
    counts every non-None key as a constraint kind). A row with an answer type but no
    constraint gets the bounded grammar of its answer; a row with neither goes unconstrained.
    """
    given = sampling_params.get("structured_outputs") or {}
    structured = {str(k): v for k, v in given.items() if v is not None}
    if structured:
        return structured
    if answer_type:
        return {"grammar": grammar_for(str(answer_type), [str(o) for o in (plain(options) or [])])}
    return None


def build_request(
    model: str,
    messages: Any,
    sampling_params: Any,
    answer_type: Any,
    options: Any,
    constraint: Constraint = "json_schema",
) -> dict[str, Any]:
    """The chat-completions JSON body for one row; `constraint` picks how the answer is bound."""
    params = plain(sampling_params) or {}
    body: dict[str, Any] = {"model": model, "messages": plain(messages, drop_none=True)}
    for name in ("temperature", "max_tokens", "seed"):
        if params.get(name) is not None:
            body[name] = params[name]
    if constraint == "grammar":
        structured = structured_outputs_for(answer_type, options, params)
        if structured is not None:
            body["structured_outputs"] = structured
        # vLLM's own field (0.29: ChatCompletionRequest.return_token_ids): the response then
        # carries the prompt token ids the server rendered. Only vLLM servers take grammars.
        body["return_token_ids"] = True
    elif constraint == "json_schema":
        response_format = response_format_for(answer_type, options, params)
        if response_format is not None:
            body["response_format"] = response_format
    else:
        raise ValueError(f"unknown constraint {constraint!r}; valid: {', '.join(CONSTRAINTS)}")
    return body


class HTTPEngine:
    """Map a batch of contract rows through an OpenAI-compatible server; one output per row."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        api_key_ref: Any = None,
        max_concurrency: int = 8,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        timeout_s: float = 120.0,
        constraint: Constraint = "json_schema",
        deadline_s: float = DEFAULT_DEADLINE_S,
        request_cache: str | None = None,
    ) -> None:
        if constraint not in CONSTRAINTS:
            raise ValueError(
                f"HTTPEngine: unknown constraint {constraint!r}; valid: {', '.join(CONSTRAINTS)}"
            )
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if not (math.isfinite(deadline_s) and deadline_s > 0):
            raise ValueError(f"deadline_s must be a finite number > 0, got {deadline_s}")
        self._key: _Secret | None = None
        self._redactor: Redactor | None = None
        if api_key_env:
            # Stripped (or refused) as the driver did: a key with a line end from an env file
            # would make the HTTP library print the header, key and all (actors/api_key.py).
            value = checked_key(os.environ.get(api_key_env, ""), api_key_env) or checked_key(
                _key_from_ref(api_key_ref) or "", api_key_env
            )
            if not value:
                # Name the variable only: the message may end up in logs.
                raise RuntimeError(
                    f"HTTPEngine: environment variable {api_key_env} is not set or empty and "
                    f"no api_key_ref was given; export it on this node, build the stage with "
                    f"pipelines.engines.stages.engine_stages.http_stage (which hands the key "
                    f"over), or set api_key_env=None"
                )
            self._key = _Secret(value)
            self._redactor = Redactor(value)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self.constraint = constraint
        limits = httpx.Limits(
            max_connections=max_concurrency, max_keepalive_connections=max_concurrency
        )
        self._client = httpx.Client(timeout=timeout_s, limits=limits)
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="http")
        self._closed = threading.Event()
        self._cache = RequestCache(location(request_cache)) if request_cache else None

    def __repr__(self) -> str:
        return (
            f"HTTPEngine(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}, max_concurrency={self.max_concurrency}, "
            f"constraint={self.constraint!r}, deadline_s={self.deadline_s:g})"
        )

    def close(self) -> None:
        """Release the threads and connections; the engine cannot be used afterwards."""
        self._closed.set()
        self._pool.shutdown(wait=True)
        self._client.close()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every input column plus ENGINE_OUTPUT's, rows in input order."""
        check_columns(batch, REQUIRED_COLUMNS, "HTTPEngine")
        n = len(batch["messages"])
        missing = np.full(n, None, dtype=object)
        answer_types = batch.get("answer_type", missing)
        options = batch.get("options", missing)
        # Without request keys (a caller's own rows) nothing is cached: the index is no key.
        keys = batch.get("request_key")
        futures = [
            self._pool.submit(
                self._row,
                batch["messages"][i],
                batch["sampling_params"][i],
                answer_types[i],
                options[i],
                str(keys[i]) if keys is not None else str(i),
                keys is not None,
            )
            for i in range(n)
        ]
        results = [f.result() for f in futures]
        outputs: dict[str, list[Any]] = {
            "generated_text": [r.text for r in results],
            "num_input_tokens": [r.input_tokens for r in results],
            "num_generated_tokens": [r.output_tokens for r in results],
            "time_taken_llm": [r.seconds for r in results],
            "engine_error": [r.error for r in results],
            "prompt_ids_sha256": [r.prompt_ids_sha256 for r in results],
        }
        return {**arrow_ready(batch), **numpy_columns(ENGINE_OUTPUT, outputs)}

    def _row(
        self,
        messages: Any,
        sampling_params: Any,
        answer_type: Any,
        options: Any,
        key: str,
        cacheable: bool = False,
    ) -> _Result:
        """One row, start to finish; every failure becomes an `engine_error`, never a raise.
        An answer is kept in the request cache before the row is done."""
        try:
            body = build_request(
                self.model, messages, sampling_params, answer_type, options, self.constraint
            )
        except Exception as exc:  # a malformed row must not fail its batch
            return self._error(f"{FINAL}: bad row: {type(exc).__name__}: {exc}")
        if self._cache is None or not cacheable:
            return self._sent(body, key)
        kept_key = cache_key(key, {"engine": "http", "body": body})
        kept = self._cache.get(kept_key)
        if kept is not None:  # paid for by an earlier run: no request
            return _Result(
                kept["generated_text"],
                kept["num_input_tokens"],
                kept["num_generated_tokens"],
                kept["time_taken_llm"],
                prompt_ids_sha256=kept["prompt_ids_sha256"],
            )
        result = self._sent(body, key)
        if result.error is None and result.text is not None:
            answer = {
                "generated_text": result.text,
                "num_input_tokens": result.input_tokens,
                "num_generated_tokens": result.output_tokens,
                "time_taken_llm": result.seconds,
                "prompt_ids_sha256": result.prompt_ids_sha256,
            }
            self._cache.put({kept_key: answer})
        return result

    def _sent(self, body: dict[str, Any], key: str) -> _Result:
        """The row's request sent, with retries within its deadline."""
        deadline = time.monotonic() + self.deadline_s
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(body, deadline)
            except Retryable as failure:
                left = deadline - time.monotonic()
                wait = self._wait_s(attempt - 1, failure.wait_s, key)
                if attempt > self.max_retries or self._closed.is_set() or wait >= left:
                    cut_by_deadline = attempt <= self.max_retries and not self._closed.is_set()
                    if cut_by_deadline and "deadline" not in failure.detail:
                        failure.detail += f" (the row's deadline of {self.deadline_s:g} s)"
                    return self._error(failure.message(attempt))
                logger.debug("request %s: %s; retry in %.2fs", key, failure.head, wait)
                time.sleep(wait)
            except Failed as failure:  # not worth repeating: bad request, unreadable answer
                return self._error(failure.message(attempt))
            except Exception as exc:  # e.g. an unsupported URL scheme: final, and row-local
                failed = Failed(type(exc).__name__, excerpt(self._redact(str(exc))))
                return self._error(failed.message(attempt))

    def _error(self, message: str) -> _Result:
        """A failed row: its message redacted, encodable, one excerpt long at most."""
        return _Result(error=self._redact(clean_text(message)))

    def _attempt(self, body: dict[str, Any], deadline: float) -> _Result:
        """One POST, read in chunks until the deadline. Raises Retryable for transient
        failures, Failed for final ones (actors/http_reply.py)."""
        started = time.perf_counter()
        headers = {"Authorization": f"Bearer {self._key.reveal()}"} if self._key else {}
        left = deadline - time.monotonic()
        if left <= 0:
            raise Retryable("deadline passed", f"{self.deadline_s:g} s for the row")
        timeout = httpx.Timeout(min(self.timeout_s, left))
        url = f"{self.base_url}/chat/completions"
        try:
            with self._client.stream(
                "POST", url, json=body, headers=headers, timeout=timeout
            ) as response:
                # Redacted before any excerpt is cut: a cut must not leave half a key.
                raw = self._redact_bytes(self._read(response, deadline))
        # Not every TransportError: a malformed URL or unsupported scheme never heals.
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise Retryable(type(exc).__name__, excerpt(self._redact(str(exc)))) from None
        seconds = time.perf_counter() - started
        content_type = response.headers.get("content-type", "")
        try:
            check_status(
                response.status_code,
                raw,
                content_type,
                _retry_after_s(response.headers.get("retry-after")),
            )
            completion = read_completion(raw, content_type)
        except Failed as failure:
            failure.detail = excerpt(self._redact(failure.detail))
            raise
        text = self._redact(completion.text)
        return _Result(
            text,
            completion.input_tokens,
            completion.output_tokens,
            seconds,
            prompt_ids_sha256=completion.prompt_ids_sha256,
        )

    def _read(self, response: httpx.Response, deadline: float) -> bytes:
        """The body, at most MAX_BODY_BYTES, read before the deadline (a server that
        trickles bytes would reset a read timeout with each one)."""
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise Failed("reply too large", f"over {MAX_BODY_BYTES} bytes; not read further")
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise Retryable(
                    "reply too slow", f"{size} bytes by the row's deadline of {self.deadline_s:g} s"
                )
        return b"".join(chunks)

    def _wait_s(self, attempt: int, retry_after_s: float | None, key: str) -> float:
        """Retry-After when the server gave one, else exponential backoff with seeded jitter."""
        if retry_after_s is not None:
            return min(retry_after_s, MAX_BACKOFF_S)
        base = self.backoff_s * 2**attempt
        # Seeded by row and attempt: reruns wait alike, and no RNG is shared across threads.
        jitter = random.Random(f"{key}:{attempt}").uniform(0.0, JITTER_FRACTION * base)
        return min(base + jitter, MAX_BACKOFF_S)

    def _redact_bytes(self, body: bytes) -> bytes:
        """`_redact` on raw bytes; bytes that are not UTF-8 pass through unchanged."""
        if self._redactor is None:
            return body
        text = body.decode("utf-8", "surrogateescape")
        return self._redactor(text).encode("utf-8", "surrogateescape")

    def _redact(self, text: str) -> str:
        """Server text may echo the request headers back; the key must not reach a row."""
        return text if self._redactor is None else self._redactor(text)


def _key_from_ref(ref: Any) -> str | None:
    """The key behind the driver's object ref (bytes, see http_stage); None without a ref."""
    if ref is None:
        return None
    import ray

    value = ray.get(ref)
    if not isinstance(value, bytes):
        raise TypeError(
            f"HTTPEngine: api_key_ref holds {type(value).__name__}, not bytes; "
            f"put the key with ray.put(key.encode())"
        )
    return value.decode()
