"""`geobuild`'s closing line: one model's result, where the tables above it are long.

Each count says which rule made it: "constructed" is our verdict (every object present,
every condition holding), "public" the benchmark's (both scores at least 0.9). A rate the
run's stopping rule leaves biased is null in the tables (pipelines.geobuild.summarize) and
is left out here too, never printed as 0.
"""

from __future__ import annotations

import polars as pl


def result_line(overall: pl.DataFrame, model: str) -> str:
    """One model's line from its `overall` table, e.g. `geobuild M: 30 of 36 problems
    constructed (83.3%) by our verdict; 29 of 36 (80.6%) by the public rule (both scores >=
    0.9); mean partial score 0.91`."""
    rows = overall.filter(pl.col("model") == model).to_dicts()
    if not rows:
        return f"geobuild {model}: no problem attempted"
    row, problems = rows[0], int(rows[0]["problems"])
    ours = _count(row["solved"], row["success_rate_all"], problems)
    parts = [f"geobuild {model}: {ours.replace(' (', ' problems constructed (', 1)} by our verdict"]
    if row["public_success_rate_all"] is not None:
        public = _count(row["solved_public"], row["public_success_rate_all"], problems)
        parts.append(f"{public} by the public rule (both scores >= 0.9)")
    if row["mean_partial_score"] is not None:
        parts.append(f"mean partial score {row['mean_partial_score']:.2f}")
    return "; ".join(parts)


def _count(solved: int | None, rate: float | None, problems: int) -> str:
    """`2 of 3 (66.7%)`; `- of 3 (-)` for a rate the run's stopping rule left out."""
    if rate is None:
        return f"- of {problems} (-)"
    return f"{int(solved or 0)} of {problems} ({100 * rate:.1f}%)"
