"""One GeoBuild run's settings: a single pydantic model, built alike by the `geobuild` command
and by the sweep, carried by the loop, and written whole to the run record.

The CLI takes its defaults from here, so `python -m pipelines geobuild` and `sweep
--benchmarks geobuild` cannot drift apart.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from geometry.dsl.dataset import LANGUAGES
from geometry.dsl.prompts import FEEDBACK_MODES
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.engines.stages.options import EngineOptions

# Reply tokens when --max-tokens is not given: our loop's (SamplingConfig's default), and
# the public GeoBuildBench runner's (its src/agent/react_agent.py asks temperature=0,
# max_tokens=10000).
GEOSEE_MAX_TOKENS = SamplingConfig.model_fields["max_tokens"].default
PUBLIC_MAX_TOKENS = 10000


class GeoBuildSettings(BaseModel):
    """Everything a GeoBuild run is asked for, except the model and the results root."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    dataset: str = Field(description="resolved path of the data file or its directory")
    lang: str = Field(default="en", description=f"problem language: {', '.join(LANGUAGES)}")
    feedback: str = Field(default="full", description=f"one of {', '.join(FEEDBACK_MODES)}")
    attach_image: bool = Field(
        default=True, description="send the figure to image-text models (not --no-image)"
    )
    max_rounds: int = Field(default=5, ge=1, description="replies per problem at most")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    pool_size: int = Field(default=1, ge=1, description="engine replicas")
    batch_size: int = Field(default=16, ge=1, description="rows per engine call")
    executors: int = Field(default=1, ge=1, description="DSL-executor actors")
    image_size: int = Field(default=512, ge=64, description="figure pixels")
    shard_rows: int = Field(default=64, ge=1, description="rows per shard")
    limit: int | None = Field(default=None, ge=1, description="the first N problems only")
    ids: str | None = Field(default=None, description="comma-separated problem ids")
    protocol: str = Field(
        default="geosee", description="geosee (our chat loop) or public (GeoBuildBench's ReAct)"
    )
    public_repo: str | None = Field(
        default=None, description="GeoBuildBench checkout: --protocol public reads its prompts"
    )
    stratified_sample: int | None = Field(
        default=None, ge=1, description="N problems, 70% solved / 30% failed in --stratify-from"
    )
    stratify_from: str | None = Field(default=None, description="earlier geobuild results")
    sample_seed: int = Field(default=42, ge=0, description="seed of the stratified sample")

    @classmethod
    def from_args(cls, args: argparse.Namespace, dataset: str) -> GeoBuildSettings:
        """The settings the `geobuild` command line asks for (`dataset` already resolved)."""
        return cls(
            dataset=dataset,
            lang=args.lang,
            feedback=args.feedback,
            attach_image=not args.no_image,
            max_rounds=args.max_rounds,
            sampling=SamplingConfig(
                temperature=args.temperature,
                max_tokens=args.max_tokens or protocol_max_tokens(args.protocol),
                seed=args.sampling_seed,
            ),
            pool_size=args.pool_size,
            batch_size=args.batch_size,
            executors=args.executors,
            image_size=args.image_size,
            shard_rows=args.shard_rows,
            limit=args.first,
            ids=args.ids,
            protocol=args.protocol,
            public_repo=None if args.public_repo is None else str(Path(args.public_repo).resolve()),
            stratified_sample=args.stratified_sample,
            stratify_from=args.stratify_from,
            sample_seed=args.sample_seed,
        )

    def engine_options(self) -> EngineOptions:
        """The engine stage's options."""
        return EngineOptions(pool_size=self.pool_size, batch_size=self.batch_size)


def protocol_max_tokens(protocol: str) -> int:
    """The reply budget of a protocol when --max-tokens is not given."""
    return PUBLIC_MAX_TOKENS if protocol == "public" else GEOSEE_MAX_TOKENS


def default(name: str) -> Any:
    """A GeoBuildSettings field's default, for the CLI's argparse defaults."""
    return GeoBuildSettings.model_fields[name].default
