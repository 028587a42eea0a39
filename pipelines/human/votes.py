"""One item's votes aggregated as the paper's crowd did: majority voting, where two
numeric answers that the scoring rule would both accept count as one answer.

Two votes agree when one, taken as the right answer, scores the other right by the models'
rule (pipelines.noregeo.scoring): a choice exactly, a number within +-0.5, a point with both
coordinates within +-0.5. Each vote's support is the number of votes that agree with it; the
leaders have the most. Leaders that all agree with each other are one answer, and the
vote's answer is the median of the votes that agree with them (per coordinate for a point):
12 and 12.5 and 12.5 give 12.5, never a tie. Leaders that do not all agree are a tie: it is
reported, and broken by a draw seeded by the item id (not by the alphabet, which would
favour `no` over `yes` and smaller numbers over larger ones).
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

TIE_RULE = (
    "majority vote, numeric answers within +-0.5 of each other counted as one (their median "
    "kept); a tie is drawn at random, seeded by the item id"
)


@dataclass(frozen=True)
class Vote:
    """The aggregated answer of one item: the winning text and how it won."""

    text: str  # normalised JSON, or the typed text when no annotator's answer could be read
    votes: dict[str, int]
    tie: bool
    leaders: list[str]


def _median_answer(texts: list[str]) -> str | None:
    """The median of JSON answers `{"answer": n}` or `{"x": .., "y": ..}`, as such a text;
    None when one of them is not a numeric answer."""
    try:
        values = [json.loads(t, parse_float=Decimal, parse_int=Decimal) for t in texts]
    except ValueError:
        return None
    if not all(isinstance(v, dict) for v in values):
        return None
    keys = sorted(values[0])
    if keys not in (["answer"], ["x", "y"]) or any(sorted(v) != keys for v in values):
        return None
    if not all(isinstance(v[k], Decimal) for v in values for k in keys):
        return None
    median: dict[str, Any] = {k: statistics.median(v[k] for v in values) for k in keys}
    return json.dumps({k: _json_number(median[k]) for k in keys})


def _json_number(value: Decimal) -> int | float:
    value = value.normalize()
    return int(value) if value == value.to_integral_value() else float(value)


def aggregate(votes: list[str], agree: Callable[[str, str], bool], item_id: str) -> Vote:
    """The item's answer from its `votes` (module docstring); `agree(a, b)`: a is right
    when b is the answer."""
    counts = Counter(votes)
    support = {v: sum(n for w, n in counts.items() if agree(w, v)) for v in counts}
    top = max(support.values())
    leaders = sorted(v for v, n in support.items() if n == top)
    tie = any(not agree(a, b) for a in leaders for b in leaders)
    if tie:
        seed = hashlib.sha256(item_id.encode()).hexdigest()
        chosen = random.Random(seed).choice(leaders)
        return Vote(chosen, dict(sorted(counts.items())), True, leaders)
    cluster = [v for v in votes if any(agree(v, lead) for lead in leaders)]
    distinct = set(cluster)
    text = leaders[0] if len(distinct) == 1 else (_median_answer(cluster) or leaders[0])
    return Vote(text, dict(sorted(counts.items())), False, leaders)
