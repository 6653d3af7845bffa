"""Whether the package the tests import is this checkout's, as the one supported install makes it (an editable
install: ``python3 -m pip install -e '.[test]'``), checked once before any test is collected (tests/conftest.py).

pytest puts the checkout first on ``sys.path`` (pyproject's ``pythonpath``), so ``import gputop_trace`` finds the
checkout's ``gputop_trace/``, which holds neither the three folders mapped into the package at install
(``parsers/``, ``analysis/``, ``tui/``) nor the compiled extensions: only an editable install maps the folders (an
import hook) and builds the extensions in place. After a plain ``pip install .`` (or none) every test module that
imports a parser, an analysis or the app would fail with ``No module named 'gputop_trace.parsers'``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path

#: the one command that makes the checkout testable
SUPPORTED_INSTALL = "python3 -m pip install -e '.[test]'"

SpecFinder = Callable[[str], ModuleSpec | None]


def _folder(spec: ModuleSpec | None) -> Path | None:
    """The folder a package's spec was found in (None when not found or not from a file)."""
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def install_problem(root: Path, find_spec: SpecFinder = importlib.util.find_spec) -> str | None:
    """Why the tests of the checkout at ``root`` cannot run against the package this Python imports, in one
    paragraph ending with the command that fixes it; None when the package is this checkout's, installed editable.
    ``find_spec`` is :func:`importlib.util.find_spec` (a test passes a stand-in)."""
    root = root.resolve()
    package = _folder(find_spec("gputop_trace"))
    if package is None:
        found = "is not importable at all"
    elif package != root / "gputop_trace":
        found = f"is imported from {package}, not from this checkout's gputop_trace/"
    else:
        parsers = _folder(find_spec("gputop_trace.parsers"))
        if parsers == root / "parsers":
            return None
        found = "is this checkout's gputop_trace/, but gputop_trace.parsers " + (
            "is missing" if parsers is None else f"comes from {parsers}, another checkout"
        )
    return (
        f"The tests cannot run against this checkout ({root}): the package gputop_trace {found}. pytest puts the "
        "checkout first on sys.path, so the tests import its gputop_trace/ folder, which lacks the three folders "
        "mapped into the package at install (parsers/, analysis/, tui/) and the compiled extensions; a plain "
        "'pip install .' installs a copy that the checkout hides, and only an editable install maps those folders "
        "and builds the extensions in place (CI requires them: GPUTOP_REQUIRE_SCANNER=1). The one supported way, "
        f"in this checkout's virtual environment: {SUPPORTED_INSTALL}   then run pytest again."
    )
