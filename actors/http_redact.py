"""The API key out of everything the http engine writes: its common echoes, not only itself.

A server may echo the request back (error pages, debugging proxies, a hostile model), in
another case or encoded. `Redactor` replaces, in any text bound for a row, a log or stderr:

- the key in any letter case (an echo upper-cased by a proxy);
- any of its characters as itself or escaped, in any mix and any case: percent-escaped (a
  URL), `\\uXXXX` (a JSON string, e.g. an error body that escapes every character), a
  backslash escape (`\\'`, `\\\\`, `\\/`, `\\xNN`, `\\n`: Python's repr, which the HTTP
  library's messages print, and JSON's short escapes), each with any number of
  backslashes (an escaped text escaped again), or an HTML character reference (`&#115;`, `&#x73;`,
  `&quot;`);
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
        patterns = [f"(?i:{_escaped_pattern(key)})"]
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


# Any number of backslashes before an escape: JSON inside a repr, a repr inside JSON, JSON
# inside JSON inside a JSON body (8 backslashes per backslash of the key), and so on.
_BACKSLASHES = r"\\+"
# The characters Python's repr and JSON escape with a backslash before the character itself.
_SELF_ESCAPED = "'\"\\/"
_NAMED_ESCAPES = {"\n": "n", "\r": "r", "\t": "t", "\b": "b", "\f": "f"}
_HTML_NAMES = {"&": "amp", '"': "quot", "'": "apos", "<": "lt", ">": "gt"}


def _escaped_pattern(key: str) -> str:
    """A pattern of `key` with each character as itself or as one of its escapes
    (module docstring), compiled case-insensitively."""
    return "".join(f"(?:{'|'.join(_char_forms(char))})" for char in key)


def _char_forms(char: str) -> list[str]:
    """The patterns of one character: itself, percent-, JSON-, repr- and HTML-escaped."""
    code = ord(char)
    forms = [re.escape(char), "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))]
    if code < 0x10000:
        forms.append(f"{_BACKSLASHES}u{code:04X}")
    else:  # JSON writes a character beyond the BMP as its UTF-16 surrogate pair
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append(f"{_BACKSLASHES}u{high:X}{_BACKSLASHES}u{low:X}")
        forms.append(f"{_BACKSLASHES}U{code:08X}")
    if code < 0x100:
        forms.append(f"{_BACKSLASHES}x{code:02X}")
    if char in _SELF_ESCAPED:
        forms.append(_BACKSLASHES + re.escape(char))
    if char in _NAMED_ESCAPES:
        forms.append(_BACKSLASHES + _NAMED_ESCAPES[char])
    forms.append(f"&#0*{code};")
    forms.append(f"&#x0*{code:X};")
    if char in _HTML_NAMES:
        forms.append(f"&{_HTML_NAMES[char]};")
    return forms
