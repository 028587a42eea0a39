"""The README's command lines, parsed and run as a reader would run them: shared by
tests/test_readme.py (every line) and tests/vllm/test_evaluate_vllm.py (the vLLM block, whose
rows it checks, in the venv that block uses)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# The README's lines that run vLLM's venv: its vLLM block after `make setup-vllm`.
VLLM_PREFIX = ".venv-vllm/"

# Checkout entries left out of the scratch copy: where the README's commands write (work/),
# and what other commands build in a checkout (make demo's out/). The real model's models/
# is linked when the checkout has it (`make test` builds it first), so the README's `make
# real-model` finds it built, as in a reader's checkout.
# .venv-vllm is linked: building it in the copy costs 3-5 min of CI (314 s measured at load
# 16-25); test_the_vllm_lines_follow_make_setup_vllm... checks the fresh-clone path instead.
# A linked venv is rebuilt in place when the checkout's pyproject.toml is newer than its
# stamp (`make setup-vllm` in the copy): run `make setup-vllm` in the checkout first.
NOT_LINKED = {".git", "work", "out"}
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


def scratch_checkout(root: Path, also_unlinked: frozenset[str] = frozenset()) -> Path:
    """A folder laid out like the checkout, with ../shared beside it; the README's outputs
    land in it instead of the real checkout."""
    work = root / "main"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in NOT_LINKED | also_unlinked and entry.exists():
            (work / entry.name).symlink_to(entry)
    shared = (REPO.parent / "shared").resolve()
    (root / "shared").symlink_to(shared)
    return work


# What make adds to its recipes' environment besides the Makefile's exports.
MAKE_VARIABLES = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKE_TERMOUT", "MAKE_TERMERR")


def makefile_exports(makefile: Path = REPO / "Makefile") -> list[str]:
    """The variables the Makefile exports (`export NAME ...`): a README line runs in a plain
    shell, where none of them is set (issue 39: a line worked only with GEOSEE_REAL_MODEL)."""
    text = makefile.read_text(encoding="utf-8")
    return re.findall(r"^export\s+([A-Za-z_]\w*)", text, flags=re.MULTILINE)


def plain_shell_env() -> dict[str, str]:
    """This process's environment less what `make` and the Makefile put there, with the
    checkout's .venv first on PATH (`source .venv/bin/activate`, whichever venv runs the
    test) and the checkout's own code: PYTHONPATH is the checkout, which its editable install
    points at too (in a git worktree, the shared venv's install points at another checkout)."""
    env = dict(os.environ)
    for name in (*makefile_exports(), *MAKE_VARIABLES):
        env.pop(name, None)
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)
    return env


def run_line(line: str, work: Path) -> subprocess.CompletedProcess[str]:
    """One README line in `work`, in a plain shell's environment (`plain_shell_env`)."""
    env = plain_shell_env()
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", line],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def assert_runs(line: str, work: Path) -> None:
    """`run_line`, failing with the line, its exit status and the ends of its output."""
    done = run_line(line, work)
    assert done.returncode == 0, (
        f"README line failed (exit {done.returncode}): {line}\n"
        f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )


def vllm_block(lines: list[str]) -> list[str]:
    """The lines that run .venv-vllm's Python, in order (the vLLM block but its make line)."""
    return [line for line in lines if line.startswith(VLLM_PREFIX)]
