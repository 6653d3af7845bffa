"""No import circle anywhere in the package: the graph of every ``import`` and ``from ... import`` in its source
(at a module's top, inside functions and under ``if TYPE_CHECKING:`` alike) has no strongly connected component
of more than one module, and no module imports itself.

The graph is built from the source with :mod:`ast`, as the installed layout names the modules: ``gputop_trace/``
plus the three folders mapped into it (``parsers/``, ``analysis/``, ``tui/``). ``from pkg import name`` is an
edge to ``pkg.name`` when that is a module, else to ``pkg``; ``import pkg.sub`` is an edge to ``pkg.sub`` only
(not to ``pkg``, whose ``__init__`` Python also runs), so a package ``__init__`` that lists its own submodules
is not a circle with them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the package's folders and the import path of each (pyproject.toml's packages and package-dir)
FOLDERS = {
    "gputop_trace": ROOT / "gputop_trace",
    "gputop_trace.parsers": ROOT / "parsers",
    "gputop_trace.analysis": ROOT / "analysis",
    "gputop_trace.tui": ROOT / "tui",
}


def package_modules(folders: Mapping[str, Path] = FOLDERS) -> dict[str, Path]:
    """Every module of the package by its import path (a package by its name, read from its ``__init__.py``; a
    compiled extension by its C source, setup.py's one file each, which imports nothing of ours)."""
    modules: dict[str, Path] = {}
    for prefix, folder in folders.items():
        for path in sorted([*folder.rglob("*.py"), *folder.rglob("*.c")]):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((prefix, *parts))
            # the mapped folders are not also modules of gputop_trace/'s own tree
            modules.setdefault(name, path)
    return modules


def _package_of(name: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imported_names(node: ast.Import | ast.ImportFrom, name: str, path: Path) -> Iterator[str]:
    """The dotted names one import statement reaches: ``pkg.name`` for each name of ``from pkg import ...``
    (checked against the modules later) and ``pkg`` itself."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        anchor = _package_of(name, path).split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)


def _resolve(target: str, modules: Mapping[str, Path]) -> str | None:
    """The module of ours a dotted name lies in (its longest prefix that is a module), or None for a name
    outside the package."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def module_imports(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The modules of ours that module ``name`` imports anywhere in its source."""
    found: set[str] = set()
    if path.suffix != ".py":
        return found
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        names = list(_imported_names(node, name, path))
        if isinstance(node, ast.ImportFrom):
            base, members = names[0], names[1:]
            submodules = [m for m in members if m in modules]
            if len(submodules) < len(members):  # a name that is not a module is read from the package itself
                submodules.append(base)
            names = submodules
        found.update(m for m in map(lambda t: _resolve(t, modules), names) if m is not None)
    return found


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other modules of ours (self-imports kept: a circle of one)."""
    return {name: module_imports(name, path, modules) for name, path in modules.items()}


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (iterative Tarjan), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components)


def import_circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph``: components of two modules or more, and modules that import themselves."""
    return [c for c in strongly_connected(graph) if len(c) > 1 or c[0] in graph[c[0]]]


def test_the_package_has_no_import_circle() -> None:
    modules = package_modules()
    assert "gputop_trace.load.loader" in modules and "gputop_trace.parsers.sniff" in modules
    circles = import_circles(import_graph(modules))
    assert not circles, "import circles (each a set of modules that import one another):\n" + "\n".join(
        "  " + " <-> ".join(circle) for circle in circles
    )


def test_circles_are_found(tmp_path: Path) -> None:
    """The graph and the components on a made-up package: a circle through a deferred import and a type-only
    import is found, a package ``__init__`` naming its own submodules is not one."""
    files = {
        "top/__init__.py": "from top import a\n",
        "top/a.py": "import top.b\n",
        "top/b.py": "def f() -> None:\n    from top.c import thing\n",
        "top/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from top import b\nthing = 1\n",
        "top/d.py": "from . import a, _native\nimport top.d\n",
        "top/_native.c": "#include <Python.h>\n",
        "mapped/__init__.py": "",
        "mapped/e.py": "from top.a import x\nimport os\n",
    }
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    modules = package_modules({"top": tmp_path / "top", "top.mapped": tmp_path / "mapped"})
    graph = import_graph(modules)
    assert graph == {
        "top": {"top.a"},
        "top.a": {"top.b"},
        "top.b": {"top.c"},
        "top.c": {"top.b"},
        "top.d": {"top._native", "top.a", "top.d"},
        "top._native": set(),
        "top.mapped": set(),
        "top.mapped.e": {"top.a"},
    }
    assert import_circles(graph) == [["top.b", "top.c"], ["top.d"]]
