"""How the rows a run covers came out: engine-error and invalid-output rates.

`evaluate` prints them at the end and fails a run whose rows are mostly engine errors: a
results directory of errors is not a finished run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import polars as pl

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.requests import SamplingConfig
from store.records import is_transient

# Above this share of engine-error rows a run has failed (evaluate's --max-error-rate
# default; the sweep applies it to each model).
DEFAULT_MAX_ERROR_RATE = 0.5


@dataclass(frozen=True)
class RunHealth:
    """How the rows a run covers (this call's and earlier calls' alike) came out."""

    rows: int
    engine_errors: int
    invalid: int  # rows the engine answered whose output does not parse
    first_error: str | None
    final_errors: int = 0  # engine errors a default rerun does not send again
    weights: str = "real"  # the model's (ModelConfig.weights): random ones answer noise

    @property
    def error_rate(self) -> float:
        """Engine errors as a share of the run's rows."""
        return self.engine_errors / self.rows if self.rows else 0.0

    @property
    def invalid_rate(self) -> float:
        """Invalid outputs as a share of the answered rows."""
        answered = self.rows - self.engine_errors
        return self.invalid / answered if answered else 0.0

    def line(self) -> str:
        """The one-line health summary `evaluate` prints."""
        answered = self.rows - self.engine_errors
        # A tiny model's accuracy reads like a result; its line says what it is (issue 39).
        noise = "; random weights: the answers are noise, a test of the pipeline, not of a model"
        return (
            f"{self.rows} rows in this run: engine errors {self.engine_errors} "
            f"({self.error_rate:.1%}); invalid outputs {self.invalid} of {answered} answered "
            f"({self.invalid_rate:.1%})" + (noise if self.weights == "random" else "")
        )

    def retry_hint(self) -> str | None:
        """One line on the rows a default rerun leaves as they are (None when there are none):
        final errors are sent again only with --retry-errors all (issue 26: a 401 or a
        proxy's page, fixed, left a run that said "nothing to do" and no way on)."""
        if not self.final_errors:
            return None
        one = self.final_errors == 1
        rows = "row holds a final engine error" if one else "rows hold final engine errors"
        return (
            f"{self.final_errors} {rows}, which a rerun leaves as stored; once the cause is "
            f"fixed (the key, the server, a proxy), rerun with --retry-errors all"
        )

    def failure(self, max_error_rate: float) -> str:
        """Why the run failed: the error count and share, and the first error."""
        first = (self.first_error or "").splitlines()[0][:300] if self.first_error else ""
        return (
            f"{self.engine_errors} of {self.rows} rows ({self.error_rate:.1%}) are engine "
            f"errors, more than --max-error-rate {max_error_rate:g}; the first: {first}"
        )


def run_health(
    results: pl.DataFrame,
    cfg: ModelConfig,
    tasks: list[str],
    setups: list[str],
    limit: int | None,
    sampling: SamplingConfig,
) -> RunHealth:
    """Error and invalid rates over the model's result rows this run covers: its tasks,
    setups, limit, revision and sampling params (other runs may share the directory)."""
    sampling = sampling.for_model(cfg)  # as evaluate asked the engine
    rows = results.filter(
        pl.col("task").is_in(tasks)
        & pl.col("setup").is_in(setups)
        & (pl.col("revision") == cfg.revision)
    )
    if limit is not None:
        index = pl.col("item_id").str.split("-").list.last().cast(pl.Int64)
        rows = rows.filter(index < limit)
    wanted = {"temperature": sampling.temperature, "max_tokens": sampling.max_tokens}
    wanted["seed"] = sampling.seed
    same = [
        all(params.get(k) == v for k, v in wanted.items())
        for params in map(json.loads, rows["sampling_params"].to_list())
    ]
    rows = rows.filter(pl.Series(same, dtype=pl.Boolean))
    errors = rows.filter(pl.col("engine_error").is_not_null())
    invalid = rows.filter(pl.col("engine_error").is_null() & ~pl.col("valid"))
    first = errors["engine_error"][0] if errors.height else None
    final = sum(not is_transient(e) for e in errors["engine_error"].to_list())
    return RunHealth(rows.height, errors.height, invalid.height, first, final, cfg.weights)
