"""The API key out of everything the http engine writes: its common echoes, not only itself.

A server may echo the request back (error pages, debugging proxies, a hostile model), in
another case or encoded. `Redactor` replaces, in any text bound for a row, a log or stderr:

- the key in any letter case (an echo upper-cased by a proxy);
- its URL encoding: any of its characters as itself or percent-escaped, in any case;
- its base64 (standard and URL-safe alphabet), also inside a longer encoded string such as
  a base64 echo of the whole `Authorization: Bearer <key>` header: base64 maps 3 bytes to 4
  characters, so the key's bytes give one stable run of characters for each of the three
  offsets at which it can start; each run is replaced.

The Bearer header echo is the key itself after `Bearer `, so the first rule covers it.
"""

from __future__ import annotations

import base64
import re

REDACTED = "[REDACTED]"
# Shorter base64 runs would match innocent text too often; a real key gives 20 or more.
MIN_ENCODED_CHARS = 8


def base64_runs(secret: bytes) -> list[str]:
    """The base64 characters that depend on `secret`'s bytes alone, for each of the three
    offsets (mod 3) at which it can start inside a longer encoded string."""
    runs = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret).decode("ascii")
        # Character c holds bits 6c..6c+5: keep those whose bits all lie in the secret's.
        first = -(-8 * offset // 6)
        last = (8 * (offset + len(secret)) - 6) // 6
        run = encoded[first : last + 1]
        if len(run) >= MIN_ENCODED_CHARS:
            runs.append(run)
    return runs


class Redactor:
    """Replaces the key and its common encodings (module docstring) with REDACTED."""

    def __init__(self, key: str) -> None:
        patterns = [f"(?i:{_url_pattern(key)})"]
        runs = base64_runs(key.encode("utf-8"))
        encoded = runs + [r.replace("+", "-").replace("/", "_") for r in runs]
        patterns += [re.escape(r) for r in dict.fromkeys(encoded)]
        # Longest first: a base64 run must not be cut by a shorter overlapping match.
        patterns.sort(key=len, reverse=True)
        self._pattern = re.compile("|".join(patterns))

    def __repr__(self) -> str:
        return "<redactor>"

    def __reduce__(self) -> str:
        raise TypeError("the redactor holds the API key and is not picklable")

    def __call__(self, text: str) -> str:
        """`text` with every echo of the key replaced."""
        return self._pattern.sub(REDACTED, text)


def _url_pattern(key: str) -> str:
    """A pattern of `key` with each character as itself or as its percent-escapes."""
    parts = []
    for char in key:
        escaped = "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))
        parts.append(f"(?:{re.escape(char)}|{escaped})")
    return "".join(parts)
