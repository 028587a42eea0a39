"""Revisions pinned by use: a hub model's results belong to one commit of its repo.

A config may name a branch or tag (`revision: main`). On its first use the sweep resolves it
to the commit it points to (the hub's model-info API, `huggingface_hub.HfApi.model_info`,
which honours HF_ENDPOINT) and runs that commit: `settings.json` of the model's results and
each run record then hold the commit, and the sweep's `status.json` lists them. A later
sweep into the same results resolves again; when the branch has moved, the results would
mix two models, so it stops (exit 2) unless told to keep the recorded commit
(`--keep-recorded-revisions`). A dry run asks no hub: it plans with the recorded commits.

`pin-revisions` writes the resolved commits into the config files themselves.
"""

from __future__ import annotations

import json
import re

from pipelines.engines.models.hub_model import HubError, HubId, is_commit, resolve_commit
from pipelines.engines.models.model_schema import ModelConfig
from store.errors import UsageError
from store.records import model_dir
from store.settings import SETTINGS_FILE
from store.storage import Location

NOT_ON_HUB = ("local", "none")  # revisions that name no hub ref at all
BENCHMARK = "noregeo"


def on_hub(cfg: ModelConfig) -> bool:
    """A model whose weights come from the hub at a revision that may still move."""
    return (
        cfg.engine in ("vllm", "hf")
        and not cfg.local
        and cfg.revision not in NOT_ON_HUB
        and not is_commit(cfg.revision)
    )


def resolve(repo: str, revision: str) -> str:
    """The commit `revision` of `repo` points to now, from the hub's model-info API
    (HubError, one line naming `repo@revision`, when the hub cannot say)."""
    return resolve_commit(HubId(repo, revision)).commit


def recorded(out: Location, cfg: ModelConfig) -> str | None:
    """The revision the model's results in `out` were made with (None: no results yet)."""
    path = model_dir(out, BENCHMARK, cfg.name) / SETTINGS_FILE
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text()).get("revision")
    except (ValueError, OSError):
        return None  # evaluate's own settings check names a broken file
    return value if isinstance(value, str) else None


def pin_by_use(
    configs: list[ModelConfig], out: Location, ask_hub: bool, keep_recorded: bool
) -> tuple[list[ModelConfig], dict[str, str]]:
    """`configs` with each hub model's revision replaced by its commit, and name -> commit.

    `ask_hub` False (a dry run): the recorded commit where there is one, else unchanged.
    A revision that now resolves to another commit than the one recorded in `out` is a
    UsageError, unless `keep_recorded`, which runs the recorded one.
    """
    pinned: list[ModelConfig] = []
    commits: dict[str, str] = {}
    for cfg in configs:
        if not on_hub(cfg):
            pinned.append(cfg)
            continue
        before = recorded(out, cfg)
        if not ask_hub:
            commit = before or cfg.revision
        else:
            try:
                now = resolve(cfg.repo, cfg.revision)
            except HubError as err:
                raise UsageError(
                    f"--models {cfg.name}: cannot resolve revision {cfg.revision!r} to a "
                    f"commit ({err}); is the hub reachable (HF_ENDPOINT)? `pin-revisions` "
                    f"or a commit in the config avoids asking"
                ) from err
            commit = now
            if before is not None and before != now:
                if not keep_recorded:
                    raise UsageError(
                        f"--models {cfg.name}: revision {cfg.revision!r} of {cfg.repo} now "
                        f"resolves to {now}, but its results in {out} were made with "
                        f"{before}; --keep-recorded-revisions runs {before}, or give another "
                        f"--out"
                    )
                commit = before
        pinned.append(cfg.model_copy(update={"revision": commit}))
        commits[cfg.name] = commit
    return pinned, commits


def pin_config_text(text: str, commit: str, was: str) -> str:
    """A config file's text with its `revision:` line set to `commit` (the rest, comments
    included, untouched); a file without one gets the line after `repo:`. The commit is
    quoted: YAML reads an all-digit hash as an integer and `1e5...` as a float."""
    line = f'revision: "{commit}"  # {was}, pinned by pin-revisions'
    new, count = re.subn(r"(?m)^revision:[^\n]*$", line, text, count=1)
    if count:
        return new
    new, count = re.subn(r"(?m)^(repo:[^\n]*)$", rf"\1\n{line}", text, count=1)
    if not count:
        raise ValueError("no repo: line to put the revision after")
    return new
