"""'Did you mean ...?' for a mistyped name (a task id, setup, engine or model config)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, valid: Iterable[str]) -> str:
    """` (did you mean X?)` for the closest valid names, or "" when none is close.

    Case is ignored in the comparison (`c-bct-ct` finds `C-BCT-CT`); the names suggested
    are spelled as they are valid."""
    by_folded = {v.casefold(): v for v in valid}
    close = difflib.get_close_matches(word.casefold(), list(by_folded), n=3, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {' or '.join(by_folded[c] for c in close)}?)"
