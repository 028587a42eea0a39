"""Every command line in README.md's code blocks runs verbatim, in order, and exits 0.

The README is a newcomer's first hour, so its commands must work as printed: this runs
each line of each fenced block through bash, in a scratch copy of the repository's layout
(symlinks to the checkout's files, with `../shared` beside it as in a real checkout), with
`.venv/bin` first on PATH as `source .venv/bin/activate` puts it. The README keeps its
examples small (`--per-task`, `--ids`) so the whole walk stays a few minutes.

A few lines cannot run here; each is listed in NOT_RUN with the reason, and the test fails
when one of those lines is no longer in the README (so the list cannot go stale).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

# Lines the test does not run, and why. Matched against the line without its comment.
NOT_RUN = {
    "make demo": "the demo is timed on a fresh clone by hand (issue notes); too long for CI",
    "make test": "this test is part of `make test`",
    "make cluster-up": "needs cloud credentials and a cluster",
    "make cluster-down": "needs cloud credentials and a cluster",
    "SWEEP_BUCKET=my-bucket make sweep-45-models": "needs a running Ray cluster",
    "geosee probe --grid configs/probes/paper.yaml --out work/results/run1": (
        "downloads ViT-B-32 weights from the model hub (offline here: refused with exit 2)"
    ),
}
# Checkout entries left out of the scratch copy: where the README's commands write (work/),
# and what other commands build in a checkout (make demo's out/, the real model's models/).
# .venv-vllm is linked: building it in the copy costs 3-5 min of CI (314 s measured at load
# 16-25); test_the_vllm_lines_follow_make_setup_vllm... checks the fresh-clone path instead.
# A linked venv is rebuilt in place when the checkout's pyproject.toml is newer than its
# stamp (`make setup-vllm` in the copy): run `make setup-vllm` in the checkout first.
NOT_LINKED = {".git", "work", "out", "models"}
# The one folder the README's commands may create in a checkout (git-ignored, .gitignore).
OUTPUT_FOLDER = "work"
# Fenced blocks marked with one of these languages hold no commands (e.g. the folder layout).
NOT_COMMANDS = {"text"}
FENCE = re.compile(r"^```([\w-]*)\s*$")


def readme_lines(text: str) -> list[str]:
    """The command lines of every fenced block but those marked as not commands (```text),
    in order, continuations joined, comments and blank lines dropped."""
    lines: list[str] = []
    inside = False
    language = ""
    pending = ""
    for raw in text.splitlines():
        fence = FENCE.match(raw.strip())
        if fence:
            inside = not inside
            language = fence.group(1) if inside else ""
            continue
        if not inside or language in NOT_COMMANDS:
            continue
        line = raw.strip()
        if pending:
            line = f"{pending} {line}"
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        pending = ""
        command = strip_comment(line)
        if command:
            lines.append(command)
    return lines


def strip_comment(line: str) -> str:
    """The line without a trailing ` # comment` (README commands quote no `#`)."""
    if line.startswith("#"):
        return ""
    return re.split(r"\s+#", line, maxsplit=1)[0].strip()


def test_readme_lines_are_parsed() -> None:
    """The parser joins continuations and drops comments, so the commands run as a shell
    would read them."""
    text = (
        "x\n```\n# only a comment\ngeosee a \\\n    --b c   # note\n\nmake demo   # d\n```\n"
        "```text\ngeometry/  not a command\n```\n"
    )
    assert readme_lines(text) == ["geosee a --b c", "make demo"]


def test_the_vllm_lines_follow_make_setup_vllm_which_builds_the_venv_in_a_fresh_clone(
    tmp_path: Path,
) -> None:
    """From a clone without .venv-vllm, the README's first line that runs it comes after
    `make setup-vllm`, and make (dry run, in a copy without .venv-vllm) would build it. Not
    the build itself: test_readme_commands_run_as_printed uses the checkout's .venv-vllm."""
    lines = readme_lines(README.read_text(encoding="utf-8"))
    uses = [i for i, line in enumerate(lines) if line.startswith(".venv-vllm/")]
    assert uses and "make setup-vllm" in lines[: uses[0]]
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints-vllm.txt", "scripts"):
        (clone / name).symlink_to(REPO / name)
    plan = subprocess.run(
        ["make", "-n", "setup-vllm"], cwd=clone, capture_output=True, text=True, timeout=60
    )
    assert plan.returncode == 0, plan.stderr
    assert "-m venv .venv-vllm" in plan.stdout and "touch .venv-vllm/.installed" in plan.stdout


def scratch_checkout(root: Path, also_unlinked: frozenset[str] = frozenset()) -> Path:
    """A folder laid out like the checkout, with ../shared beside it; the README's outputs
    land in it instead of the real checkout."""
    work = root / "main"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in NOT_LINKED | also_unlinked:
            (work / entry.name).symlink_to(entry)
    shared = (REPO.parent / "shared").resolve()
    (root / "shared").symlink_to(shared)
    return work


def run_line(line: str, work: Path) -> subprocess.CompletedProcess[str]:
    """One README line in `work`, with the checkout's venv first on PATH and the installed
    package (no PYTHONPATH), as a reader has them."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", line],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.fresh_venv
@pytest.mark.timeout(3600)
def test_the_vllm_block_runs_in_a_clone_without_its_venv(tmp_path: Path) -> None:
    """The README's vLLM block, from its `make setup-vllm` on, in a copy of the checkout where
    .venv-vllm does not exist: the make line builds it, and the block's lines run with it.
    Outside `make test` (`make test-readme-fresh`): the build takes 3-5 min on 2 cores, and
    `make test` itself runs the same make target on CI's fresh clone before its tests."""
    lines = readme_lines(README.read_text(encoding="utf-8"))
    block = lines[lines.index("make setup-vllm") :]
    block = [line for line in block if line == "make setup-vllm" or line.startswith(".venv-vllm/")]
    assert len(block) >= 3, block
    work = scratch_checkout(tmp_path, also_unlinked=frozenset({".venv-vllm"}))
    assert not (work / ".venv-vllm").exists()
    for line in block:
        done = run_line(line, work)
        assert done.returncode == 0, (
            f"README line failed (exit {done.returncode}): {line}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
        )
    assert (work / ".venv-vllm" / ".installed").is_file()


@pytest.mark.timeout(3600)
def test_readme_commands_run_as_printed(tmp_path: Path) -> None:
    """Each README command line, in order, exits 0 in a fresh folder (a line that needs an
    earlier one's output gets it, as a reader following the README would)."""
    lines = readme_lines(README.read_text(encoding="utf-8"))
    stale = sorted(set(NOT_RUN) - set(lines))
    assert not stale, f"NOT_RUN lists lines no longer in README.md: {stale}"
    work = scratch_checkout(tmp_path)
    before = {entry.name for entry in work.iterdir()}
    ran = 0
    for line in lines:
        if line in NOT_RUN:
            continue
        done = run_line(line, work)
        assert done.returncode == 0, (
            f"README line failed (exit {done.returncode}): {line}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
        )
        ran += 1
    assert ran >= 15, f"only {ran} README lines ran; did the README lose its examples?"
    created = {entry.name for entry in work.iterdir()} - before
    assert created == {OUTPUT_FOLDER}, f"README commands wrote outside {OUTPUT_FOLDER}/: {created}"
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert f"/{OUTPUT_FOLDER}/" in ignored
