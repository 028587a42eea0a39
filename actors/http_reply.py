"""What the http engine takes from a server, checked where it enters: one rule per field.

A server's reply is untrusted input. Every value the engine keeps is checked and normalised
here, so that nothing it stores can fail later in Ray or the shard writer (issue 26: one
reply with text that is not UTF-8-encodable, or a token count beyond int64, failed every
row of every rerun). A reply that breaks a rule raises `Failed` (final: the same request
gets the same reply) or `Retryable` (transient: a person would try again), which the engine
turns into that row's `engine_error`; the other rows go on.

- status: 200 is read; 408, 409, 425, 429 and 5xx are transient; any other is final.
- body: at most MAX_BODY_BYTES, read in chunks (a larger one is never held whole; final);
  empty: transient (a proxy, a server restarting); an HTML page: transient (a proxy's
  error page); not UTF-8 or not JSON (nesting too deep for the parser included): final;
  a UTF-8 byte-order mark before the JSON is skipped.
- JSON: an object with a non-empty `choices` list whose first item holds a `message`
  object; else final, naming the first part that is missing or of the wrong type.
- text: `message.content`, a string (None, with or without a `refusal`: final, naming it;
  another type: final); lone surrogates (valid JSON escapes, not encodable as UTF-8) become
  U+FFFD; text longer than MAX_TEXT_CHARS is cut there, TRUNCATED giving its length.
- usage: `prompt_tokens` and `completion_tokens`, integers (or integral floats) from 0 to
  2**63-1; anything else (NaN, inf, negative, too large, thousands of digits, a string, a
  bool) is stored as 0, as a missing `usage` is: token counts are the server's
  bookkeeping, and a bad one must not cost a correct answer (issue 26 saw NaN counts turn
  right answers into errors).
- prompt_token_ids (vLLM's reply to `return_token_ids`): a list of at most MAX_PROMPT_IDS
  integers in 0..2**63-1, kept as its digest (actors.contract.prompt_ids_digest); anything
  else: no digest, the answer kept.

`finish_reason` is not stored (the result schema has no column for it), so no rule reads it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from actors.contract import prompt_ids_digest

# Final and transient: the kind that opens every `engine_error` (store.records reads it).
TRANSIENT = "transient"
FINAL = "final"
# Statuses a person would retry: timeout, conflict, too early, rate limit, server errors.
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
# The most reply bytes read per attempt: far above any completion the benchmarks ask for
# (a 200,000-character text is at most 1.2 MB as JSON escapes), far below what would hurt a
# worker's memory.
MAX_BODY_BYTES = 8 * 1024 * 1024
# The most characters of a reply's text stored; the rest is cut and TRUNCATED says how long
# the reply was. NoReGeo answers are a few dozen characters, GeoBuild programs a few thousand.
MAX_TEXT_CHARS = 100_000
TRUNCATED = "\n[geosee: reply cut at {kept} of {total} characters]"
INT64_MAX = 2**63 - 1
# Prompt ids a reply may report: more than any context length this project runs.
MAX_PROMPT_IDS = 1_000_000
# A row's deadline over all its attempts and waits (HTTPEngine; ModelConfig.api_deadline_s):
# five of the slowest completions a benchmark asks for (a few hundred tokens from an API
# model), with room for backoff.
DEFAULT_DEADLINE_S = 300.0
EXCERPT_CHARS = 200
# Digits of the longest JSON integer converted (int64 has 19, and a sign).
MAX_INT_DIGITS = 20
_SURROGATES = re.compile("[\ud800-\udfff]")


class Failed(Exception):
    """A failed attempt: `head` (e.g. "HTTP 400") and a short `detail` from the response."""

    kind = FINAL

    def __init__(self, head: str, detail: str) -> None:
        super().__init__(f"{head}: {detail}")
        self.head = head
        self.detail = detail

    def message(self, attempts: int) -> str:
        """The row's `engine_error`: kind, head, attempts and detail."""
        plural = "attempt" if attempts == 1 else "attempts"
        return f"{self.kind}: {self.head} after {attempts} {plural}: {self.detail}"


class Retryable(Failed):
    """A failed attempt worth repeating; `wait_s` is the server's Retry-After, if any."""

    kind = TRANSIENT

    def __init__(self, head: str, detail: str, wait_s: float | None = None) -> None:
        super().__init__(head, detail)
        self.wait_s = wait_s


@dataclass(frozen=True)
class Completion:
    """What a row keeps of a 200 reply: its text and token counts, all checked."""

    text: str
    input_tokens: int
    output_tokens: int
    prompt_ids_sha256: str | None = None


def clean_text(text: str) -> str:
    """`text` encodable as UTF-8: lone surrogates (which JSON may carry as escapes) become
    U+FFFD, the replacement character."""
    return _SURROGATES.sub("\ufffd", text)


def excerpt(text: str) -> str:
    """A short, one-line, UTF-8-encodable excerpt of server text for an error message."""
    flat = " ".join(clean_text(text).split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "..."


def capped(text: str) -> str:
    """`text` cut at MAX_TEXT_CHARS, saying how long it was; shorter text unchanged."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + TRUNCATED.format(kept=MAX_TEXT_CHARS, total=len(text))


def token_count(value: Any) -> int:
    """A usage count: an integer (or integral float) from 0 to INT64_MAX, else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= INT64_MAX:
        return value
    return 0


def is_html(body: bytes, content_type: str) -> bool:
    """Whether a body is an HTML page (a proxy's or gateway's), not an API reply."""
    if "html" in content_type.lower():
        return True
    start = body.lstrip()[:15].lower()
    return start.startswith((b"<!doctype", b"<html"))


def check_status(status: int, body: bytes, content_type: str, wait_s: float | None) -> None:
    """Raise for a status that is not 200: Retryable for TRANSIENT_STATUSES and 5xx."""
    if status == 200:
        return
    detail = excerpt(body.decode("utf-8", "replace"))
    if status in TRANSIENT_STATUSES or 500 <= status <= 599:
        raise Retryable(f"HTTP {status}", detail, wait_s)
    raise Failed(f"HTTP {status}", detail)


def read_completion(body: bytes, content_type: str) -> Completion:
    """The checked completion in a 200 reply's body (module docstring: the rules)."""
    if not body.strip():
        raise Retryable("empty reply", "HTTP 200 with no body")
    if is_html(body, content_type):
        raise Retryable("HTML page instead of a completion", excerpt(_html_text(body)))
    try:
        # utf-8-sig: a byte-order mark before a valid body is a server's quirk, not an error.
        data = json.loads(body.decode("utf-8-sig"), parse_int=_json_int)
    except UnicodeDecodeError:
        raise Failed("reply not UTF-8", excerpt(body.decode("utf-8", "replace"))) from None
    except (ValueError, RecursionError):
        raise Failed("reply not JSON", excerpt(body.decode("utf-8", "replace"))) from None
    message = _message(data)
    text = message.get("content")
    if not isinstance(text, str):
        refusal = message.get("refusal")
        if refusal is not None or text is None:
            raise Failed("completion without text", f"refusal: {excerpt(str(refusal))}")
        raise Failed("unreadable completion", f"content is a {type(text).__name__}")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        capped(clean_text(text)),
        token_count(usage.get("prompt_tokens")),
        token_count(usage.get("completion_tokens")),
        prompt_ids(data.get("prompt_token_ids")),
    )


def _json_int(text: str) -> int | float:
    """A JSON integer; one longer than MAX_INT_DIGITS is inf, which every rule above treats
    as out of range (a count stored as 0, no prompt-ids digest). Python refuses to convert
    more than 4,300 digits, which made a 5,000-digit usage count cost a correct answer."""
    return int(text) if len(text) <= MAX_INT_DIGITS else math.inf


def prompt_ids(value: Any) -> str | None:
    """The digest of the prompt token ids a vLLM server reports (`return_token_ids`), or None
    when it sent none or anything but a list of token ids (each an int in 0..2**63-1): a
    malformed field costs the row its digest, not its answer."""
    if not isinstance(value, list) or len(value) > MAX_PROMPT_IDS:
        return None
    if not all(type(i) is int and 0 <= i <= INT64_MAX for i in value):
        return None
    return prompt_ids_digest(value)


def _message(data: Any) -> dict[str, Any]:
    """`choices[0].message` of a reply, each step's type checked."""
    if not isinstance(data, dict):
        raise Failed("unreadable completion", f"JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise Failed("unreadable completion", f"choices is {_kind(choices)}")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise Failed("unreadable completion", f"choices[0].message is {_kind(message)}")
    return message


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    if isinstance(value, list) and not value:
        return "an empty list"
    return f"a {type(value).__name__}"


def _html_text(body: bytes) -> str:
    """An HTML page's text, tags dropped, for an excerpt."""
    return re.sub(r"<[^>]*>", " ", body[:4096].decode("utf-8", "replace"))
