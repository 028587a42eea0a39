"""One line for an engine whose node was lost with no node left to host it.

The forwarder that waited for the engine raises `EngineLostError` inside a Ray Data actor;
the driver gets it wrapped (Ray Data's UserCodeException, Ray's RayTaskError holding the
worker's exception in `cause`). Its message names the node and the model; this finds it.
"""

from __future__ import annotations

from store.errors import error_chain

# The forwarder's error, by name: importing the engine stages here would load Ray for every
# command's error path.
LOST = "EngineLostError"


def engine_lost(err: BaseException) -> str | None:
    """The lost engine's message when `err` (or an error it was raised from) is one; else
    None."""
    found = [e for e in error_chain(err) if any(c.__name__ == LOST for c in type(e).__mro__)]
    # The worker's own exception (Ray's `cause`) before Ray's copy, whose text is a traceback.
    found.sort(key=lambda e: type(e).__name__ != LOST)
    if not found or not found[0].args:
        return None
    return " ".join(str(found[0].args[0]).splitlines()[-1].split())
