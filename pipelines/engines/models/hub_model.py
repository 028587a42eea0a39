"""Hub ids: `--model ORG/NAME[@REVISION]` for the engines that load weights (hf, vllm).

A hub id is resolved in three steps, each through huggingface_hub (which reads
HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE):

1. the revision (default `main`) to the commit it points to now (the model-info API);
2. that commit's `config.json`, so that a model needing remote code is refused before its
   weights are fetched (`pipelines.engines.models.config_from_checkpoint` builds the config
   from it);
3. that commit's snapshot (config, tokenizer and processor files and one weights format)
   into the Hugging Face cache: the engines load from that local folder.

Every failure is a HubError whose message is one line naming the id: the hub could not be
reached (offline, no connection), no such model, no such revision, or another HTTP answer.
"""

from __future__ import annotations

import errno
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A hub id's snapshot holds the files the CPU stages read (TOKENIZER_FILES) and one
# weights format (`weight_patterns`).
from pipelines.engines.models.checkpoint_files import TOKENIZER_FILES

# Weights formats transformers and vLLM load, the preferred one first: a repo holding
# several gets only the first it has (a hub repo often has both .safetensors and .bin).
WEIGHT_FORMATS = ("*.safetensors", "*.bin", "*.pt", "*.pth")
CONFIG_FILE = "config.json"
log = logging.getLogger(__name__)
COMMIT = re.compile(r"[0-9a-f]{40}")


class HubError(RuntimeError):
    """The hub could not say or give what a hub id names; the message is one line."""


@dataclass(frozen=True)
class HubId:
    """`ORG/NAME[@REVISION]` split; revision None means the repo's default branch."""

    repo: str
    revision: str | None

    def __str__(self) -> str:
        return self.repo + (f"@{self.revision}" if self.revision else "")


@dataclass(frozen=True)
class HubCommit:
    """A hub id resolved: the commit its revision points to and the files it holds."""

    repo: str
    revision: str
    commit: str
    files: tuple[str, ...]


def is_commit(revision: str) -> bool:
    """A full commit hash: nothing to resolve, nothing that can move."""
    return COMMIT.fullmatch(revision) is not None


def parse_hub_id(text: str) -> HubId | None:
    """`text` as a hub id (one slash, huggingface_hub's own rules for repo ids, an optional
    non-empty `@REVISION`), or None when it cannot be one. A YAML file name is never one."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    repo, at, revision = text.partition("@")
    if repo.count("/") != 1 or (at and not revision.strip()) or revision != revision.strip():
        return None
    if repo.endswith((".yaml", ".yml")):
        return None
    try:
        validate_repo_id(repo)
    except HFValidationError:
        return None
    return HubId(repo, revision or None)


def endpoint() -> str:
    """The hub address huggingface_hub uses (HF_ENDPOINT, read at its import)."""
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def _unreachable(hub_id: HubId, err: BaseException) -> HubError:
    from huggingface_hub import constants
    from huggingface_hub.errors import OfflineModeIsEnabled

    if constants.HF_HUB_OFFLINE or isinstance(err, OfflineModeIsEnabled):
        why = "HF_HUB_OFFLINE=1 forbids it"
    else:
        said = " ".join(str(err).split())[:160]
        why = f"{type(err).__name__}: {said}" if said else type(err).__name__
    return HubError(f"{hub_id}: the hub at {endpoint()} could not be reached ({why})")


def _hub_error(hub_id: HubId, err: Exception) -> HubError:
    """One line for what huggingface_hub raised about `hub_id`."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"the hub at {endpoint()}"
    if isinstance(err, RevisionNotFoundError):
        return HubError(
            f"{hub_id}: {hub_id.repo} has no revision {hub_id.revision!r} on {where} "
            f"(give a branch, tag or commit of it)"
        )
    if isinstance(err, GatedRepoError):
        return HubError(
            f"{hub_id}: {hub_id.repo} is gated on {where}: accept its terms on its page and "
            f"log in (`hf auth login` or HF_TOKEN)"
        )
    if isinstance(err, RepositoryNotFoundError):
        return HubError(
            f"{hub_id}: {where} has no model {hub_id.repo} (or it is private: log in with "
            f"`hf auth login` or HF_TOKEN)"
        )
    if isinstance(err, HfHubHTTPError):
        status = err.response.status_code if err.response is not None else "an error"
        return HubError(f"{hub_id}: {where} answered HTTP {status}; try again later")
    return _unreachable(hub_id, err)


def resolve_commit(hub_id: HubId) -> HubCommit:
    """The commit `hub_id`'s revision points to now, and its files (the model-info API)."""
    from huggingface_hub import HfApi, constants

    revision = hub_id.revision or str(constants.DEFAULT_REVISION)
    try:
        info = HfApi().model_info(hub_id.repo, revision=revision)
    except Exception as err:  # noqa: BLE001 (every failure becomes one line: _hub_error)
        raise _hub_error(hub_id, err) from err
    sha = info.sha
    if not isinstance(sha, str) or not is_commit(sha):
        raise HubError(f"{hub_id}: the hub at {endpoint()} answered no commit ({sha!r})")
    files = tuple(s.rfilename for s in info.siblings or [])
    return HubCommit(hub_id.repo, revision, sha, files)


def fetch_config(hub_id: HubId, commit: HubCommit) -> dict[str, Any]:
    """The commit's `config.json`, fetched alone (before any weights)."""
    import json

    from huggingface_hub import hf_hub_download

    if CONFIG_FILE not in commit.files:
        raise HubError(
            f"{hub_id}: commit {commit.commit} has no {CONFIG_FILE}: not a transformers "
            f"checkpoint (give a model config for it)"
        )
    try:
        path = hf_hub_download(commit.repo, CONFIG_FILE, revision=commit.commit)
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise HubError(f"{hub_id}: its {CONFIG_FILE} is not JSON ({err})") from err
    except Exception as err:  # noqa: BLE001 (one line: _hub_error)
        raise _hub_error(hub_id, err) from err
    if not isinstance(config, dict):
        raise HubError(f"{hub_id}: its {CONFIG_FILE} is not a JSON object")
    return config


def weight_patterns(files: tuple[str, ...]) -> list[str]:
    """The one weights format to fetch: the first of WEIGHT_FORMATS the commit has."""
    from fnmatch import fnmatch

    for pattern in WEIGHT_FORMATS:
        if any(fnmatch(f, pattern) for f in files):
            return [pattern]
    return []


def snapshot_patterns(files: tuple[str, ...]) -> list[str]:
    """What a snapshot of a commit holding `files` fetches: config, tokenizer and processor
    files, and one weights format."""
    return [*TOKENIZER_FILES, *weight_patterns(files)]


def listed_files(hub_id: HubId, commit: str) -> dict[str, int]:
    """The files of `commit` a snapshot fetches (snapshot_patterns), with their sizes, from
    the hub's listing of the commit (no file is fetched)."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile
    from huggingface_hub.utils import filter_repo_objects

    try:
        entries = HfApi().list_repo_tree(hub_id.repo, revision=commit, recursive=True)
        sizes = {e.path: int(e.size) for e in entries if isinstance(e, RepoFile)}
    except Exception as err:  # noqa: BLE001 (one line: _hub_error)
        raise _hub_error(hub_id, err) from err
    wanted = snapshot_patterns(tuple(sizes))
    return {name: sizes[name] for name in filter_repo_objects(sizes, allow_patterns=wanted)}


def fetch_file(hub_id: HubId, commit: str, name: str, folder: Path) -> Path:
    """One file of `commit` fetched into `folder` (at its path in the repo), not into the
    Hugging Face cache: the caller deletes it once it is copied."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars

    if not sys.stderr.isatty() and not are_progress_bars_disabled():
        disable_progress_bars()  # a log would get every frame of the bars
    try:
        return Path(hf_hub_download(hub_id.repo, name, revision=commit, local_dir=folder))
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise _hub_error(hub_id, err) from err
        raise HubError(f"{hub_id}: no room for {name} in {folder} ({err.strerror})") from err
    except Exception as err:  # noqa: BLE001 (one line: _hub_error)
        raise _hub_error(hub_id, err) from err


def download(hub_id: HubId, commit: HubCommit) -> Path:
    """The commit's snapshot in the Hugging Face cache (what is there already is kept): its
    config, tokenizer and processor files and one weights format. Progress bars only on a
    terminal; one log line says which commit is fetched."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars

    patterns = snapshot_patterns(commit.files)
    log.info("%s: commit %s; fetching its files into the Hugging Face cache", hub_id, commit.commit)
    if not sys.stderr.isatty() and not are_progress_bars_disabled():
        disable_progress_bars()  # a log would get every frame of the bars
    try:
        folder = snapshot_download(commit.repo, revision=commit.commit, allow_patterns=patterns)
    except Exception as err:  # noqa: BLE001 (one line: _hub_error)
        raise _hub_error(hub_id, err) from err
    return Path(folder)
