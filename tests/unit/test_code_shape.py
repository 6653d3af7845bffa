"""The shape of the package's code (issue 36): no module imports another module's private (``_name``) names, and
no function or method is longer than :data:`MAX_FUNCTION_LINES` lines (its ``def`` line to its last line, docstring
included). Checked on the source folders of the installed package (gputop_trace/, parsers/, analysis/, tui/ of the
checkout); tests may import private names and are not checked."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

#: the longest a function or method may be, in lines
MAX_FUNCTION_LINES = 80
#: compiled extension modules, imported by name from the one module that wraps each (the normal pattern for one)
EXTENSION_MODULES = frozenset({"_fastscan", "_rows", "_sqlite_ints", "_replay"})
#: the packages whose folders are checked (parsers/, analysis/ and tui/ are mapped into gputop_trace)
PACKAGES = ("gputop_trace", "gputop_trace.parsers", "gputop_trace.analysis", "gputop_trace.tui")


def _folders() -> list[Path]:
    """The source folder of each of :data:`PACKAGES`, as installed."""
    out: list[Path] = []
    for name in PACKAGES:
        init = importlib.import_module(name).__file__
        assert init is not None, name
        out.append(Path(init).resolve().parent)
    return out


def _sources() -> list[tuple[str, ast.Module]]:
    """(path relative to the checkout, parsed module) of every Python file of the folders, each file once (the
    mapped folders are not inside gputop_trace/, so none is met twice)."""
    folders = _folders()
    root = folders[0].parent
    seen: set[Path] = set()
    out: list[tuple[str, ast.Module]] = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if path in seen:
                continue
            seen.add(path)
            shown = path.relative_to(root) if path.is_relative_to(root) else path
            out.append((str(shown), ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))
    return out


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in EXTENSION_MODULES


def private_imports(sources: list[tuple[str, ast.Module]]) -> list[str]:
    """``path:line from module import _name`` of every ``from module import _name`` in ``sources``."""
    out: list[str] = []
    for path, tree in sources:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                out += [
                    f"{path}:{node.lineno} from {module} import {a.name}" for a in node.names if _is_private(a.name)
                ]
    return out


def long_functions(sources: list[tuple[str, ast.Module]]) -> list[str]:
    """``path:line name (N lines)`` of every function or method in ``sources`` longer than
    :data:`MAX_FUNCTION_LINES` lines."""
    out: list[str] = []
    for path, tree in sources:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out.append(f"{path}:{node.lineno} {node.name} ({n} lines)")
    return out


@pytest.fixture(scope="module")
def sources() -> list[tuple[str, ast.Module]]:
    found = _sources()
    assert len(found) > 100, "the package's source folders were not found"
    return found


def test_no_module_imports_another_modules_private_names(sources: list[tuple[str, ast.Module]]) -> None:
    offenders = private_imports(sources)
    assert not offenders, "private names imported from another module (make them public):\n" + "\n".join(offenders)


def test_no_function_is_longer_than_the_limit(sources: list[tuple[str, ast.Module]]) -> None:
    offenders = long_functions(sources)
    assert not offenders, f"functions longer than {MAX_FUNCTION_LINES} lines (split them by meaning):\n" + "\n".join(
        offenders
    )


def test_the_checks_find_what_they_look_for() -> None:
    body = "\n".join(f"    x = {i}" for i in range(MAX_FUNCTION_LINES))
    code = (
        "from a.b import _hidden, shown, __version__\n"
        "from gputop_trace.parsers.chrome import _fastscan\n"
        f"def long():\n{body}\n"
        f"def short():\n{body[: body.rindex(chr(10))]}\n"
    )
    tree = [("m.py", ast.parse(code))]
    assert private_imports(tree) == ["m.py:1 from a.b import _hidden"]
    assert long_functions(tree) == [f"m.py:3 long ({MAX_FUNCTION_LINES + 1} lines)"]
