"""An API key as read from its environment variable, checked before any request carries it.

Issue 38: an env file with CRLF line ends or a CI secret with a trailing newline gives a key
that ends in `\\r`, `\\n` or a tab. The HTTP library then refuses the header, and its message
prints the header's repr, key and all, into every row's `engine_error`. So the key is
checked where it is read (the driver, before Ray; each worker, again): whitespace around it
is stripped (the driver says so once, without the key); anything inside it that an HTTP
header cannot carry (whitespace, control characters, non-ASCII) refuses the run in one line
that names the variable and the position, never the key.
"""

from __future__ import annotations

import sys

# Visible ASCII: what every API key is made of, and what a header value carries unchanged.
_VISIBLE = frozenset(chr(c) for c in range(0x21, 0x7F))
_told: set[str] = set()


class BadKeyError(ValueError):
    """A key whose inside holds a character no HTTP header may carry."""


def checked_key(value: str, variable: str, tell: bool = False) -> str:
    """`value` without surrounding whitespace; BadKeyError if a character inside it is not
    visible ASCII. `tell`: say once per process and variable that whitespace was stripped."""
    key = value.strip()
    for position, char in enumerate(key, start=1):
        if char not in _VISIBLE:
            what = "whitespace" if char.isspace() else "a control or non-ASCII character"
            raise BadKeyError(
                f"${variable} holds {what} at character {position} of {len(key)} inside the "
                f"key; an HTTP header cannot carry it: export the key alone, e.g. "
                f"`export {variable}=...`"
            )
    if tell and key != value and variable not in _told:
        _told.add(variable)
        print(
            f"note: ${variable} had whitespace around the key (a line end from an env file?); "
            f"stripped",
            file=sys.stderr,
        )
    return key
