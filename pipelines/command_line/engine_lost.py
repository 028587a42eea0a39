"""One line for an engine whose node was lost with no node left to host it.

The forwarder that waited for the engine raises `EngineLostError` inside a Ray Data actor
(pipelines/engines/stages/resident_hosts.py). The driver gets Ray's task error around Ray
Data's UserCodeException; the worker's exception itself does not travel (a pickled
exception drops its `__cause__`), only its traceback's text, whose last line is
`...EngineLostError: <message>`. This finds the message there, or in the exception when it
is at hand (the same process).
"""

from __future__ import annotations

import re

from store.errors import error_chain

# The forwarder's error, by name: importing the engine stages here would load Ray for every
# command's error path.
LOST = "EngineLostError"
_LOST_TEXT = re.compile(r"\b" + LOST + r": (?P<message>[^\n]+)")


def engine_lost(err: BaseException) -> str | None:
    """The lost engine's message when `err` (or an error it was raised from, or a remote
    traceback in one) is one; else None."""
    for current in error_chain(err):
        if type(current).__name__ == LOST and current.args:
            return " ".join(str(current.args[0]).split())
    for current in error_chain(err):
        found = _LOST_TEXT.search(str(current))
        if found:
            return " ".join(found["message"].split())
    return None
