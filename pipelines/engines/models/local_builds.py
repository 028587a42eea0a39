"""Where a local config's model lives when no variable names it.

A config with `repo_env` (the real model SmolLM2, the tiny random models) is a folder built
on this machine. The Makefile exports the variables, but a README line runs in a plain
shell too: without the variable, the folder is the one the build command puts under the
checkout (`models/<name>`, as `make real-model` does). A folder that is not there is one
line naming the command that builds it, before anything is written (issue 39: the config's
bare name went on to the engine, which failed after the run had written its settings).
"""

from __future__ import annotations

import os
from pathlib import Path

# The checkout's folder of locally built models (git-ignored), beside configs/.
MODELS_DIR = Path(__file__).resolve().parents[3] / "models"
# The command that builds each variable's folder, where the Makefile has one.
BUILD_COMMANDS = {"GEOSEE_REAL_MODEL": "make real-model"}


class MissingBuildError(ValueError):
    """A local config's model folder that is neither named nor built."""


def local_repo(name: str, repo: str, repo_env: str, build_tiny: str | None) -> str:
    """The folder of config `name`: `$repo_env` when set, else `MODELS_DIR/name` when it
    holds a checkpoint (config.json). Else a tiny model's config keeps its `repo` (the
    sweep builds the model where it runs, pipelines/sweep/run.py), and any other is a
    MissingBuildError saying how to build it."""
    named = os.environ.get(repo_env)
    if named:
        return named
    folder = MODELS_DIR / name
    if (folder / "config.json").is_file():
        return str(folder)
    if build_tiny:
        return repo
    build = (
        f"`{BUILD_COMMANDS[repo_env]}` in {MODELS_DIR.parent}"
        if repo_env in BUILD_COMMANDS
        else "its build"
    )
    raise MissingBuildError(
        f"model {name}: no checkpoint in {folder} and ${repo_env} is unset; build it with "
        f"{build}, or set {repo_env} to its folder"
    )
