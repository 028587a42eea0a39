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
        "from pipelines.engines.stages.engine_stages import STAGES\n"
        "from store.errors import UsageError\n"
        "import actors.contract\n"
    )
    assert violations(path) == []


# What each sub-package of pipelines/engines/ may import of the others (docs/architecture.md,
# pipelines/engines/__init__.py): configs read none of them; the stages read them all.
ENGINE_PARTS: dict[str, set[str]] = {
    "models": {"models"},
    "session": {"session"},
    "prompts": {"models", "prompts"},
    "stages": {"models", "prompts", "session", "stages"},
}
ENGINES = "pipelines.engines"


def engine_part(module: str) -> str | None:
    """The engines sub-package a module belongs to (None: not an engines module, or the
    package itself)."""
    parts = module.split(".")
    if not module.startswith(ENGINES + ".") or len(parts) < 3:
        return None
    # A module loose in engines/ has no part (test_no_module_is_loose_in_engines names it).
    return parts[2] if parts[2] in ENGINE_PARTS or len(parts) > 3 else None


def engine_violations(path: Path) -> list[str]:
    """Imports of an engines module that cross into a sub-package it may not import."""
    importer = module_name(path)
    ours = engine_part(importer)
    if ours is None:
        return []
    problems = []
    for line, module, names in imports(path):
        targets = [f"{module}.{n}" for n in names] if module == ENGINES else [module]
        for target in targets:
            theirs = engine_part(target)
            if theirs is not None and theirs not in ENGINE_PARTS.get(ours, set()):
                problems.append(
                    f"{path.relative_to(ROOT)}:{line}: {importer} (engines/{ours}) imports "
                    f"{target} (engines/{theirs}), which engines/{ours} may not import"
                )
    return problems


def test_engine_sub_packages_import_only_what_they_may() -> None:
    problems = [p for path in source_files() for p in engine_violations(path)]
    assert not problems, "imports against pipelines/engines/__init__.py:\n" + "\n".join(problems)


def loose_engine_modules() -> list[str]:
    """Modules directly in pipelines/engines/ (only its docstring-only __init__ may be)."""
    folder = ROOT / "pipelines" / "engines"
    loose = [p.name for p in sorted(folder.glob("*.py")) if p.name != "__init__.py"]
    init = folder / "__init__.py"
    if init.is_file() and ast.parse(init.read_text()).body[1:]:
        loose.append("__init__.py holds code")
    unknown = [p.name for p in folder.iterdir() if p.is_dir() and p.name not in ENGINE_PARTS]
    return loose + [f"{name}/ (no floor in ENGINE_PARTS)" for name in unknown if name[0] != "_"]


def test_no_module_is_loose_in_engines() -> None:
    assert loose_engine_modules() == []


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (at any depth of the file; `from a import b`
    names the module a.b when there is one)."""
    modules = {module_name(p): p for p in files}

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for _, module, names in imports(path):
            if module.startswith("."):
                continue
            for target in [f"{module}.{n}" for n in names if f"{module}.{n}" in modules] or [
                module
            ]:
                found = known(target)
                if found is not None and found != name:
                    edges.add(found)
        graph[name] = edges
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of the graph: each strongly connected group of more than one module
    (Tarjan's algorithm, iterative: the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    circles.append(sorted(group))
    return circles


def test_no_import_circle() -> None:
    circles = import_circles(import_graph(source_files()))
    assert not circles, "modules that import each other (directly or round a loop):\n" + "\n".join(
        " <-> ".join(c) for c in circles
    )


# Files longer than this need a reason in their docstring, on a line starting with the marker.
MAX_LINES = 500
ONE_FILE_MARKER = "Why one file:"


def too_long(path: Path) -> str | None:
    """`path` when it is longer than MAX_LINES lines and its docstring gives no reason."""
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n") + (not text.endswith("\n"))
    if lines <= MAX_LINES:
        return None
    docstring = ast.get_docstring(ast.parse(text)) or ""
    if any(line.strip().startswith(ONE_FILE_MARKER) for line in docstring.splitlines()):
        return None
    return f"{path.relative_to(ROOT)}: {lines} lines, no '{ONE_FILE_MARKER}' in its docstring"


def test_no_file_past_500_lines_without_a_reason() -> None:
    folders = (*OURS, "tests", "bench", "scripts")
    files = sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))
    long = [found for p in files if (found := too_long(p))]
    assert not long, "\n".join(long)


def _tree(root: Path, files: dict[str, str]) -> None:
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def test_the_structure_checks_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each check names what breaks it: a circle through a function-level import, a module
    loose in engines/, a prompts module importing the stages, an unreasoned long file."""
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    _tree(
        tmp_path,
        {
            "pipelines/engines/__init__.py": '"""Doc."""\n',
            "pipelines/engines/loose.py": "X = 1\n",
            "pipelines/engines/prompts/a.py": "from pipelines.engines.stages import b\n",
            "pipelines/engines/stages/b.py": "def f():\n    import pipelines.engines.prompts.a\n",
            "pipelines/engines/models/c.py": "from pipelines.engines import session\n",
            "pipelines/long.py": "x = 1\n" * (MAX_LINES + 1),
            "pipelines/reasoned.py": f'"""Long.\n\n{ONE_FILE_MARKER} one table.\n"""\n'
            + "x = 1\n" * MAX_LINES,
        },
    )
    files = sorted(tmp_path.rglob("*.py"))
    assert import_circles(import_graph(files)) == [
        ["pipelines.engines.prompts.a", "pipelines.engines.stages.b"]
    ]
    assert loose_engine_modules() == ["loose.py"]
    crossing = [p for path in files for p in engine_violations(path)]
    assert len(crossing) == 2, crossing
    assert "engines/prompts) imports pipelines.engines.stages (engines/stages)" in crossing[1], (
        crossing
    )
    assert "engines/models) imports pipelines.engines.session" in crossing[0], crossing
    assert too_long(tmp_path / "pipelines/long.py") == (
        f"pipelines/long.py: {MAX_LINES + 1} lines, no '{ONE_FILE_MARKER}' in its docstring"
    )
    assert too_long(tmp_path / "pipelines/reasoned.py") is None
