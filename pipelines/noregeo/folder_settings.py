"""What a NoReGeo results folder records of the settings that change an answer (engine,
model, sampling, grammars, the item table's generator settings), and the check that a run
joining the folder has the same ones: a resume never mixes rows of two settings."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from geometry.answers import grammar_for
from geometry.tasks.options import DEFAULT_OPTIONS
from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.prompts.requests import SamplingConfig
from pipelines.noregeo.run_settings import recorded_settings
from store.errors import UsageError
from store.settings import SETTINGS_FILE, differences, read_settings
from store.shards import shard_files
from store.storage import Location

log = logging.getLogger(__name__)


def grammar_hashes() -> dict[str, str]:
    """sha256 of the grammar shape per answer type, for the run record."""
    shapes = {
        "choice": grammar_for("choice", ["yes", "no"]),
        "number": grammar_for("number"),
        "point": grammar_for("point"),
    }
    return {k: hashlib.sha256(v.encode()).hexdigest() for k, v in shapes.items()}


ITEM_PREFIX = "item_"
# Results folders written before the item fields were recorded held items of this version.
LEGACY_GENERATOR_VERSION = "noregeo-gen-1"


def item_settings(manifest: dict[str, Any] | None) -> dict[str, Any]:
    """What of an item table changes its items (so its answers): generator version, item
    seed, image size and every generator option, one flat `item_*` field each so that a
    refused resume names the option. None where the manifest (or an older one) lacks it."""
    manifest = manifest or {}
    options = manifest.get("options") or {}
    fields = {
        "generator_version": manifest.get("generator_version"),
        "seed": manifest.get("seed"),
        "image_size": manifest.get("image_size"),
        **{name: options.get(name) for name in DEFAULT_OPTIONS.as_dict()},
    }
    return {ITEM_PREFIX + name: value for name, value in fields.items()}


def settings(
    cfg: ModelConfig, sampling: SamplingConfig, manifest: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What changes a NoReGeo answer: one choice of it per results folder (run_settings),
    the item table's generator settings (`item_settings` of its manifest) included."""
    return {
        "engine": cfg.engine,
        "repo": cfg.repo,
        "revision": cfg.revision,
        "sampling": sampling.model_dump(),
        "grammar_sha256": grammar_hashes(),
        **item_settings(manifest),
    }


def check_folder_settings(root: Location, ours: dict[str, Any]) -> bool:
    """`ours` against both sources of the folder's settings: settings.json and every run
    record (run_settings.recorded_settings). A missing settings.json is rebuilt from the
    records (said in one line); rows with neither source are refused, since nothing says
    what made them. A source recorded before the item fields were (LEGACY_GENERATOR_VERSION
    items) is compared without them, and only items of that version may join its rows.
    Whether settings.json is to be rebuilt (it was missing and the records agree)."""
    stored = read_settings(root)
    records = recorded_settings(root)
    if stored is None and not records and root.exists() and shard_files(root):
        raise UsageError(
            f"{root} holds result rows but neither {SETTINGS_FILE} nor run records: nothing "
            "says which settings made them; use another --out"
        )
    sources = [(str(path), recorded) for path, recorded in records]
    if stored is not None:
        sources.insert(0, (str(root / SETTINGS_FILE), stored))
    for source, recorded in sources:
        _check_source(root, source, recorded, ours)
    if stored is not None or not records:
        return False
    log.warning(
        "%s has no %s: rebuilt from the %d run record(s) in %s, which agree with this run",
        root, SETTINGS_FILE, len(records), root / "runs",
    )  # fmt: skip
    return True


def _check_source(
    root: Location, source: str, stored: dict[str, Any], ours: dict[str, Any]
) -> None:
    """UsageError naming the fields where one source of the folder's settings differs."""
    legacy = not any(k.startswith(ITEM_PREFIX) for k in stored)
    keys = tuple(k for k in ours if not (legacy and k.startswith(ITEM_PREFIX)))
    differ = differences(stored, ours, keys)
    version = ours[f"{ITEM_PREFIX}generator_version"]
    if legacy and version != LEGACY_GENERATOR_VERSION:
        differ.append(
            f"{ITEM_PREFIX}generator_version={LEGACY_GENERATOR_VERSION!r} (now {version!r})"
        )
    if differ:
        raise UsageError(
            f"{root} holds a run with other settings: {', '.join(differ)} (from {source}); "
            "use another --out"
        )
