"""The two 95% intervals the console and the report print, computed by scipy, and the one
name each carries wherever it is shown (summarize's titles and the report's sections say
the same words).

- Accuracy over a group of items (summarize's `ci95 low/high %`, the report's overall and
  per-category tables): the percentile bootstrap over items, `scipy.stats.bootstrap` with
  BOOTSTRAP_SAMPLES resamples from a generator seeded with BOOTSTRAP_SEED, so the same rows
  (in the same order: summarize sorts them by request key) give the same interval. It equals,
  to the last bit, the numpy resampling it replaced (same generator, same draws).
- A cell's interval where only counts are known (the report's key results and Table 2, and
  the chance test that gates its marks): the Wilson score interval,
  `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 0
BOOTSTRAP_METHOD = (
    f"95% percentile bootstrap over items ({BOOTSTRAP_SAMPLES:,} resamples, seed "
    f"{BOOTSTRAP_SEED}; scipy.stats.bootstrap)"
)
WILSON_METHOD = "95% Wilson score interval (scipy.stats.binomtest)"


def bootstrap_ci(
    correct: np.ndarray, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of a 0/1 vector; (nan, nan) when it is
    empty. Every resample of a constant vector has its mean, so that is the interval
    (scipy would warn that the data are degenerate and still return it)."""
    values = np.asarray(correct, dtype=np.float64)
    if len(values) == 0:
        return (float("nan"), float("nan"))
    if np.all(values == values[0]):
        return (float(values[0]), float(values[0]))
    result = stats.bootstrap(
        (values,), np.mean, n_resamples=samples, confidence_level=0.95, method="percentile",
        rng=np.random.default_rng(seed), vectorized=True,
    )  # fmt: skip
    interval = result.confidence_interval
    return (float(interval.low), float(interval.high))


def wilson_interval(correct: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval (%) of `correct` of `n`; (0, 100) when n is 0."""
    if n == 0:
        return 0.0, 100.0
    interval = stats.binomtest(int(correct), int(n)).proportion_ci(
        confidence_level=0.95, method="wilson"
    )
    return max(0.0, 100 * float(interval.low)), min(100.0, 100 * float(interval.high))
