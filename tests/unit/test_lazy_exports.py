"""The concept packages' public names: each resolves, the type checkers' imports list the same names as the lazy
table, and reading a light module's name does not import the rest of its package (the command line's start-up)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ANALYSIS = Path(__file__).resolve().parents[2] / "analysis"
PACKAGES = sorted(p.parent.name for p in ANALYSIS.glob("*/__init__.py") if p.parent.name != "diff")


def _type_checking_names(init: Path) -> dict[str, tuple[str, ...]]:
    """``{submodule: names}`` imported under ``if TYPE_CHECKING:`` in ``init``."""
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                found[imp.module.rsplit(".", 1)[1]] = tuple(a.name for a in imp.names)
    return found


@pytest.mark.parametrize("name", PACKAGES)
def test_public_names_resolve_and_agree(name: str) -> None:
    package = importlib.import_module(f"gputop_trace.analysis.{name}")
    homes: dict[str, tuple[str, ...]] = package._HOMES
    assert _type_checking_names(ANALYSIS / name / "__init__.py") == homes
    listed = sorted(n for names in homes.values() for n in names)
    assert sorted(package.__all__) == listed
    for module, names in homes.items():
        home = importlib.import_module(f"gputop_trace.analysis.{name}.{module}")
        for n in names:
            assert getattr(package, n) is getattr(home, n)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = package.not_a_name


def test_a_light_name_imports_only_its_module() -> None:
    code = (
        "import sys; from gputop_trace.analysis.gaps import cause_label; "
        "print(sorted(m for m in sys.modules if m.startswith('gputop_trace.analysis.gaps')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['gputop_trace.analysis.gaps', 'gputop_trace.analysis.gaps.causes']"
