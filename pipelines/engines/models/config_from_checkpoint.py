"""The config of a model given by its own files rather than a YAML config: a local
checkpoint folder, or a hub id's snapshot (pipelines/engines/models/hub_model.py), its modality
and context read from `config.json` and its weights from the provenance file a checkpoint
built here carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from geometry.item import SETUPS
from pipelines.engines.models import checkpoint_files
from pipelines.engines.models.hub_model import HubError, HubId, download, fetch_config
from pipelines.engines.models.hub_model import resolve_commit as resolve_hub_commit
from pipelines.engines.models.llava_original import LAYOUT, is_original_llava
from pipelines.engines.models.model_fields import Weights
from pipelines.engines.models.model_schema import ModelConfig, ModelConfigError

# The file a checkpoint folder built here names its weights in (`real-model`, `tiny-model`).
PROVENANCE_FILE = "provenance.json"


def checkpoint_weights(path: Path) -> Weights:
    """What a checkpoint folder's provenance file says of its weights; `real` without one
    (a checkpoint from elsewhere is pretrained unless it says otherwise)."""
    try:
        record = json.loads((path / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "real"
    value = record.get("weights") if isinstance(record, dict) else None
    return value if value in ("real", "random") else "real"


def checkpoint_config(
    engine: str,
    name: str,
    repo: str,
    revision: str,
    config: dict[str, Any],
    trust_remote_code: bool,
    snapshot: Path | None = None,
) -> ModelConfig:
    """The config of a checkpoint given by its files (`config.json` read as `config`): the
    local folder `repo`, or a hub id's `snapshot` folder (with `repo` the id)."""
    modality = checkpoint_files.modality(config)
    positions = checkpoint_files.context_length(config)
    # The checkpoint's own context (a GeoBuild conversation outgrows the 4096 default).
    context = {"max_model_len": positions} if positions else {}
    return ModelConfig(
        name=name,
        repo=repo,
        revision=revision,
        engine=engine,
        modality=modality,
        local=True,
        setups=list(SETUPS) if modality == "image-text" else ["text"],
        trust_remote_code=trust_remote_code,
        weights=checkpoint_weights(snapshot or Path(repo)),
        snapshot=None if snapshot is None else str(snapshot),
        **context,
    )


def hub_config(
    engine: str, hub_id: HubId, revision: str | None, trust_remote_code: bool
) -> ModelConfig:
    """The config of a hub id, built from its files at the commit its revision points to
    now; the snapshot is downloaded only once the remote-code check has passed."""
    if hub_id.revision and revision and hub_id.revision != revision:
        raise ModelConfigError(
            f"--model {hub_id} and --revision {revision} name two revisions; give one"
        )
    wanted = HubId(hub_id.repo, hub_id.revision or revision)
    try:
        commit = resolve_hub_commit(wanted)
        config = fetch_config(wanted, commit)
        if checkpoint_files.needs_remote_code(config) and not trust_remote_code:
            raise ModelConfigError(
                f"--model {wanted}: its config.json maps model_type "
                f"{config.get('model_type')!r}, which transformers lacks, to the repo's own "
                f"code (auto_map); add --trust-remote-code if you trust that code"
            )
        if not is_original_llava(config):
            folder = download(wanted, commit)
    except HubError as err:
        raise ModelConfigError(f"--model {err}") from err
    if is_original_llava(config):  # fetched for its conversion, and deleted after
        from pipelines.engines.models.llava_convert import hub_converted

        converted = hub_converted(wanted, commit, wanted.repo)
        return _config_of_conversion(
            engine, wanted.repo, wanted.repo, commit.commit, converted, trust_remote_code
        )
    return checkpoint_config(
        engine, wanted.repo, wanted.repo, commit.commit, config, trust_remote_code, folder
    )


def original_llava_config(
    engine: str, folder: Path, revision: str, trust_remote_code: bool
) -> ModelConfig:
    """The config of a local original-layout LLaVA checkpoint (`--model FOLDER`): converted
    to llava-hf in the cache (pipelines/engines/models/llava_convert.py), run from there."""
    return _converted_config(
        engine,
        folder.name,
        str(folder.resolve()),
        revision,
        folder,
        str(folder.resolve()),
        trust_remote_code,
    )


def _converted_config(
    engine: str,
    name: str,
    repo: str,
    revision: str,
    folder: Path,
    origin: str,
    trust_remote_code: bool,
) -> ModelConfig:
    from pipelines.engines.models.llava_convert import converted_folder

    converted = converted_folder(folder, origin)
    return _config_of_conversion(engine, name, repo, revision, converted, trust_remote_code)


def _config_of_conversion(
    engine: str, name: str, repo: str, revision: str, converted: Path, trust_remote_code: bool
) -> ModelConfig:
    """The config of an original-layout checkpoint run from its llava-hf copy `converted`."""
    config = json.loads((converted / "config.json").read_text(encoding="utf-8"))
    cfg = checkpoint_config(
        engine, name, repo, revision, config, trust_remote_code, snapshot=converted
    )
    return cfg.model_copy(update={"layout": LAYOUT})
