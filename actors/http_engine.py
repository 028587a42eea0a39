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

Rows run concurrently, at most `max_concurrency` in flight; 429, 5xx, timeouts and
connection errors are retried with exponential backoff.
A row that still fails gets `engine_error` and `generated_text` = None; the batch goes on.
Every error starts with its kind, `transient: ` (429, 5xx, timeout, connection error: a
later run may succeed, so `store.records.finished_keys` lets a rerun retry the row) or
`final: ` (a bad request or an unreadable answer: repeating it gives the same).

The API key: the engine's own environment variable `api_key_env` if the worker has it (a
cluster whose nodes or image export it), else the value behind `api_key_ref`, a Ray object
the driver put in the object store (pipelines.engines.stages.http_stage). Never a runtime-env
variable or a constructor argument: Ray writes runtime envs to its logs in plain text and
constructor arguments into task specs. The key is never put into rows, logs, exceptions or
repr; server text that echoes it is redacted before it lands in a row.
"""

from __future__ import annotations

import email.utils
import logging
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

from actors.contract import (
    ENGINE_OUTPUT,
    check_columns,
    numpy_columns,
    plain,
    prompt_ids_digest,
)
from geometry.answers import grammar_for, json_schema_for

logger = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("messages", "sampling_params")
MAX_BACKOFF_S = 60.0  # cap on one wait, whether from backoff or a server's Retry-After
JITTER_FRACTION = 0.1  # spreads retries of rows that failed together
EXCERPT_CHARS = 200
REDACTED = "[REDACTED]"
# The kind that opens every `engine_error` (module docstring); readers split on the colon.
TRANSIENT = "transient"
FINAL = "final"
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


class _Failed(Exception):
    """A failed attempt: `head` (e.g. "HTTP 400") and a short `detail` from the response."""

    def __init__(self, head: str, detail: str) -> None:
        super().__init__(f"{head}: {detail}")
        self.head = head
        self.detail = detail

    kind = FINAL

    def message(self, attempts: int) -> str:
        plural = "attempt" if attempts == 1 else "attempts"
        return f"{self.kind}: {self.head} after {attempts} {plural}: {self.detail}"


class _Retryable(_Failed):
    """A failed attempt worth repeating; `wait_s` is the server's Retry-After, if any."""

    kind = TRANSIENT

    def __init__(self, head: str, detail: str, wait_s: float | None = None) -> None:
        super().__init__(head, detail)
        self.wait_s = wait_s


def _arrow_ready(column: np.ndarray) -> np.ndarray:
    """A column as Python lists/dicts: Ray cannot turn nested numpy arrays back into Arrow.

    Returned unchanged, Ray's own `messages` column (dicts holding ndarrays) falls back to
    pickled Python objects, which Parquet and polars cannot read as structs.
    """
    if column.dtype != object or not any(isinstance(v, np.ndarray | Mapping) for v in column):
        return column
    out = np.empty(len(column), dtype=object)
    for i, value in enumerate(column):  # item by item: numpy would stack equal-length lists
        out[i] = plain(value)
    return out


def _retry_after_s(header: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent/bad."""
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
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
    ) -> None:
        if constraint not in CONSTRAINTS:
            raise ValueError(
                f"HTTPEngine: unknown constraint {constraint!r}; valid: {', '.join(CONSTRAINTS)}"
            )
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self._key: _Secret | None = None
        if api_key_env:
            value = os.environ.get(api_key_env) or _key_from_ref(api_key_ref)
            if not value:
                # Name the variable only: the message may end up in logs.
                raise RuntimeError(
                    f"HTTPEngine: environment variable {api_key_env} is not set or empty and "
                    f"no api_key_ref was given; export it on this node, build the stage with "
                    f"pipelines.engines.stages.http_stage (which hands the key over), or set "
                    f"api_key_env=None"
                )
            self._key = _Secret(value)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.constraint = constraint
        limits = httpx.Limits(
            max_connections=max_concurrency, max_keepalive_connections=max_concurrency
        )
        self._client = httpx.Client(timeout=timeout_s, limits=limits)
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="http")
        self._closed = threading.Event()

    def __repr__(self) -> str:
        return (
            f"HTTPEngine(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}, max_concurrency={self.max_concurrency}, "
            f"constraint={self.constraint!r})"
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
        keys = batch.get("request_key", np.arange(n))
        futures = [
            self._pool.submit(
                self._row,
                batch["messages"][i],
                batch["sampling_params"][i],
                answer_types[i],
                options[i],
                str(keys[i]),
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
        inputs = {name: _arrow_ready(column) for name, column in batch.items()}
        return {**inputs, **numpy_columns(ENGINE_OUTPUT, outputs)}

    def _row(
        self, messages: Any, sampling_params: Any, answer_type: Any, options: Any, key: str
    ) -> _Result:
        """One row, start to finish; every failure becomes an `engine_error`, never a raise."""
        try:
            body = build_request(
                self.model, messages, sampling_params, answer_type, options, self.constraint
            )
        except Exception as exc:  # a malformed row must not fail its batch
            return _Result(error=self._redact(f"{FINAL}: bad row: {type(exc).__name__}: {exc}"))
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(body)
            except _Retryable as failure:
                if attempt > self.max_retries or self._closed.is_set():
                    return _Result(error=self._redact(failure.message(attempt)))
                wait = self._wait_s(attempt - 1, failure.wait_s, key)
                logger.debug("request %s: %s; retry in %.2fs", key, failure.head, wait)
                time.sleep(wait)
            except _Failed as failure:  # not worth repeating: bad request, unreadable answer
                return _Result(error=self._redact(failure.message(attempt)))
            except Exception as exc:  # e.g. an unsupported URL scheme: final, and row-local
                failed = _Failed(type(exc).__name__, _excerpt(str(exc)))
                return _Result(error=self._redact(failed.message(attempt)))

    def _attempt(self, body: dict[str, Any]) -> _Result:
        """One POST. Raises _Retryable for transient failures, _Failed for final ones."""
        started = time.perf_counter()
        headers = {"Authorization": f"Bearer {self._key.reveal()}"} if self._key else {}
        try:
            response = self._client.post(
                f"{self.base_url}/chat/completions", json=body, headers=headers
            )
        # Not every TransportError: a malformed URL or unsupported scheme never heals.
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise _Retryable(type(exc).__name__, _excerpt(str(exc))) from None
        seconds = time.perf_counter() - started
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(
                f"HTTP {response.status_code}",
                _excerpt(response.text),
                _retry_after_s(response.headers.get("retry-after")),
            )
        if response.status_code != 200:
            raise _Failed(f"HTTP {response.status_code}", _excerpt(response.text))
        try:
            data = response.json()
            message = data["choices"][0]["message"]
            text = message.get("content")
            usage = data.get("usage") or {}
            input_tokens = int(usage.get("prompt_tokens") or 0)
            output_tokens = int(usage.get("completion_tokens") or 0)
            prompt_ids = prompt_ids_digest(data.get("prompt_token_ids"))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise _Failed("unreadable completion", _excerpt(response.text)) from None
        if not isinstance(text, str):
            refusal = message.get("refusal")
            raise _Failed("completion without text", f"refusal: {_excerpt(str(refusal))}")
        return _Result(
            self._redact(text), input_tokens, output_tokens, seconds, prompt_ids_sha256=prompt_ids
        )

    def _wait_s(self, attempt: int, retry_after_s: float | None, key: str) -> float:
        """Retry-After when the server gave one, else exponential backoff with seeded jitter."""
        if retry_after_s is not None:
            return min(retry_after_s, MAX_BACKOFF_S)
        base = self.backoff_s * 2**attempt
        # Seeded by row and attempt: reruns wait alike, and no RNG is shared across threads.
        jitter = random.Random(f"{key}:{attempt}").uniform(0.0, JITTER_FRACTION * base)
        return min(base + jitter, MAX_BACKOFF_S)

    def _redact(self, text: str) -> str:
        """Server text may echo the request headers back; the key must not reach a row."""
        if self._key is None:
            return text
        return text.replace(self._key.reveal(), REDACTED)


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


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "..."
