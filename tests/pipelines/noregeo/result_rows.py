"""Scored NoReGeo result rows as the engine step hands them to the shard writer: the one
builder of the shard tests (test_shard_hygiene.py, test_shard_integrity.py)."""

from __future__ import annotations


def request_key(k: int) -> str:
    """Row `k`'s request key: 64 hex digits, as a sha256 key is."""
    return f"{k:064x}"


def scored_rows(setup: str, start: int, n: int) -> list[dict[str, object]]:
    """Rows `start`..`start + n - 1` of one numeric task in `setup`: valid answers, even rows
    right, squared error k."""
    return [
        {
            "item_id": f"N-ECL-SLT-{k:04d}",
            "task": "N-ECL-SLT",
            "category": "Calc",
            "answer_type": "number",
            "setup": setup,
            "pair_id": None,
            "sampling_params": {"temperature": 0.0},
            "request_key": request_key(k),
            "generated_text": f'{{"answer": {k}}}',
            "valid": True,
            "correct": k % 2 == 0,
            "sq_error": float(k),
        }
        for k in range(start, start + n)
    ]
