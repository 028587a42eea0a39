"""What a config's revision names: a hub commit to pin, an API model's snapshot, or nothing
(a local checkpoint, the default branch, a baseline)."""

from __future__ import annotations

from pipelines.engines.models.model_schema import ModelConfig

# Revisions that name no hub commit: a local checkpoint, the default branch, a baseline.
UNPINNED_REVISIONS = ("local", "main", "none")


def api_model(cfg: ModelConfig) -> str:
    """The model name an API engine sends: the snapshot the config records as its revision
    (`gpt-4.1-2025-04-14`), so the results are of the model the record names, not of
    whatever the alias (`gpt-4.1`) points to that day; the repo when no revision is pinned."""
    return cfg.repo if cfg.revision in UNPINNED_REVISIONS else cfg.revision


def hub_revision(revision: str) -> str | None:
    """The hub revision to pin, or None where there is none (local, main, baselines)."""
    return None if revision in UNPINNED_REVISIONS else revision
