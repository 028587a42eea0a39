"""No import runs up a floor (docs/architecture.md): every import of our packages, at module
level or inside a function, is checked against what its folder may import; and no pipelines
wing imports another wing's private (`_x`) name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("geometry", "store", "actors", "probes", "pipelines")

# What each folder may import, from the floor table in docs/architecture.md. A pipelines
# module is a wing module unless it is the command line itself (pipelines/cli.py,
# console.py, __main__.py).
ALLOWED: dict[str, set[str]] = {
    "geometry": {"geometry"},
    "store": {"geometry", "store"},
    "probes": {"geometry", "store", "probes"},
    "actors": {"geometry", "store", "probes", "actors"},
    "pipelines": {"geometry", "store", "probes", "actors", "pipelines"},
    "cli": {"geometry", "store", "probes", "actors", "pipelines", "cli"},
}
# The top floor: the command line, which no other module may import.
CLI_MODULES = {"pipelines.cli", "pipelines.console", "pipelines.__main__"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def floor(module: str) -> str:
    """The floor a module of ours stands on: its top package, or `cli` for the command line."""
    return "cli" if module in CLI_MODULES else module.split(".")[0]


def wing(module: str) -> str | None:
    """A pipelines module's wing: its folder under pipelines/ (or its own name at the top)."""
    parts = module.split(".")
    if parts[0] != "pipelines" or len(parts) < 2:
        return None
    return parts[1]


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import of our packages in a file, at any depth;
    `import a.b` gives names [] and `from a import b, c` gives names [b, c]."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    found.append((node.lineno, alias.name, []))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in OURS:
                found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append((node.lineno, "." * node.level + (node.module or ""), []))
    return found


def violations(path: Path) -> list[str]:
    """What `path` imports against the floor table, each as `file:line: what`."""
    importer = module_name(path)
    where = path.relative_to(ROOT)
    problems = []
    for line, module, names in imports(path):
        if module.startswith("."):
            problems.append(f"{where}:{line}: relative import {module} (write it absolute)")
            continue
        # `from pipelines import cli` names the module pipelines.cli.
        targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in CLI_MODULES] or [module]
        for target in targets:
            if floor(target) not in ALLOWED[floor(importer)]:
                problems.append(
                    f"{where}:{line}: {importer} ({floor(importer)}) imports {target} "
                    f"({floor(target)}), a floor above it"
                )
        ours, theirs = wing(importer), wing(module)
        if ours and theirs and ours != theirs:
            for name in names:
                if name.startswith("_"):
                    problems.append(
                        f"{where}:{line}: wing {ours} imports {module}.{name}, "
                        f"a private name of wing {theirs}"
                    )
    return problems


def source_files() -> list[Path]:
    return sorted(p for package in OURS for p in (ROOT / package).rglob("*.py"))


def test_every_package_has_files() -> None:
    """The walk sees every floor (a renamed folder would otherwise pass by checking nothing)."""
    seen = {module_name(p).split(".")[0] for p in source_files()}
    assert seen == set(OURS)


def test_no_import_runs_up_a_floor() -> None:
    problems = [problem for path in source_files() for problem in violations(path)]
    assert not problems, "imports against docs/architecture.md:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("relative", "source", "expected"),
    [
        ("store/bad.py", "from pipelines.noregeo.results import RESULT_SCHEMA\n", "a floor above"),
        ("geometry/bad.py", "def f():\n    import store.atomic\n", "a floor above"),
        ("probes/bad.py", "from actors.contract import plain\n", "a floor above"),
        ("pipelines/sweep/bad.py", "from pipelines import cli\n", "a floor above"),
        ("pipelines/sweep/bad.py", "from pipelines.cli import UsageError\n", "a floor above"),
        ("pipelines/sweep/bad.py", "from pipelines.noregeo.evaluate import _x\n", "private"),
        ("actors/bad.py", "from . import contract\n", "relative import"),
    ],
)
def test_a_bad_import_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str, source: str, expected: str
) -> None:
    """The checks can fail: each bad import is reported with its file and line."""
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    path = tmp_path / relative
    path.parent.mkdir(parents=True)
    path.write_text(source)
    problems = violations(path)
    assert len(problems) == 1 and expected in problems[0], problems
    assert problems[0].startswith(f"{relative}:{source.count(chr(10))}:"), problems


def test_same_wing_private_and_allowed_imports_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    path = tmp_path / "pipelines" / "noregeo" / "ok.py"
    path.parent.mkdir(parents=True)
    path.write_text(
        "from pipelines.noregeo.evaluate import _x\n"
        "from pipelines.engines.stages import STAGES\n"
        "from store.errors import UsageError\n"
        "import actors.contract\n"
    )
    assert violations(path) == []
