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

import subprocess
from pathlib import Path

import pytest

from tests.readme_commands import (
    OUTPUT_FOLDER,
    README,
    REPO,
    VLLM_PREFIX,
    assert_runs,
    makefile_exports,
    readme_lines,
    run_line,
    scratch_checkout,
    vllm_block,
)

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


def test_readme_lines_are_parsed() -> None:
    """The parser joins continuations and drops comments, so the commands run as a shell
    would read them."""
    text = (
        "x\n```\n# only a comment\ngeosee a \\\n    --b c   # note\n\nmake demo   # d\n```\n"
        "```text\ngeometry/  not a command\n```\n"
    )
    assert readme_lines(text) == ["geosee a --b c", "make demo"]


def test_readme_lines_run_without_the_makefiles_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader's plain shell has none of what the Makefile exports (issue 39: a README line
    worked only with GEOSEE_REAL_MODEL set, and the walk, run by `make test`, had it)."""
    exported = makefile_exports()
    assert {"GEOSEE_REAL_MODEL", "OMP_NUM_THREADS"} <= set(exported)
    for name in exported:
        monkeypatch.setenv(name, "from-make")
    monkeypatch.setenv("MAKEFLAGS", "-j2")
    shown = run_line("env", tmp_path).stdout
    assert "from-make" not in shown and "MAKEFLAGS=" not in shown, shown


def test_the_vllm_lines_follow_make_setup_vllm_which_builds_the_venv_in_a_fresh_clone(
    tmp_path: Path,
) -> None:
    """From a clone without .venv-vllm, the README's first line that runs it comes after
    `make setup-vllm`, and make (dry run, in a copy without .venv-vllm) would build it. Not
    the build itself: test_readme_commands_run_as_printed uses the checkout's .venv-vllm."""
    lines = readme_lines(README.read_text(encoding="utf-8"))
    uses = [i for i, line in enumerate(lines) if line.startswith(VLLM_PREFIX)]
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


@pytest.mark.fresh_venv
@pytest.mark.timeout(3600)
def test_the_vllm_block_runs_in_a_clone_without_its_venv(tmp_path: Path) -> None:
    """The README's vLLM block, from its `make setup-vllm` on, in a copy of the checkout where
    .venv-vllm does not exist: the make line builds it, and the block's lines run with it.
    Outside `make test` (`make test-readme-fresh`): the build takes 3-5 min on 2 cores, and
    `make test` itself runs the same make target on CI's fresh clone before its tests."""
    lines = readme_lines(README.read_text(encoding="utf-8"))
    block = ["make setup-vllm", *vllm_block(lines)]
    assert "make setup-vllm" in lines and len(block) >= 3, block
    work = scratch_checkout(tmp_path, also_unlinked=frozenset({".venv-vllm"}))
    assert not (work / ".venv-vllm").exists()
    for line in block:
        assert_runs(line, work)
    assert (work / ".venv-vllm" / ".installed").is_file()


@pytest.mark.timeout(3600)
def test_readme_commands_run_as_printed(tmp_path: Path) -> None:
    """Each README command line, in order, exits 0 in a fresh folder (a line that needs an
    earlier one's output gets it, as a reader following the README would).

    The vLLM block's lines (after its `make setup-vllm`, which runs here) run as printed in
    tests/vllm/test_evaluate_vllm.py, which also checks the rows they write: one engine load
    (~1.5 min) in `make test` instead of two."""
    lines = readme_lines(README.read_text(encoding="utf-8"))
    by_the_vllm_tests = vllm_block(lines)
    assert by_the_vllm_tests, f"README.md has no line that runs {VLLM_PREFIX}"
    stale = sorted(set(NOT_RUN) - set(lines))
    assert not stale, f"NOT_RUN lists lines no longer in README.md: {stale}"
    work = scratch_checkout(tmp_path)
    before = {entry.name for entry in work.iterdir()}
    ran = 0
    for line in lines:
        if line in NOT_RUN or line in by_the_vllm_tests:
            continue
        assert_runs(line, work)
        ran += 1
    assert ran >= 15, f"only {ran} README lines ran; did the README lose its examples?"
    created = {entry.name for entry in work.iterdir()} - before
    assert created == {OUTPUT_FOLDER}, f"README commands wrote outside {OUTPUT_FOLDER}/: {created}"
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert f"/{OUTPUT_FOLDER}/" in ignored
