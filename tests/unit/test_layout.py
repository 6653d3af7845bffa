"""The package stays readable: import path = file path, no god modules, no giant functions (issue 13)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

from tests.paths import ROOT

PRODUCT = ("gputop_trace", "parsers", "analysis", "tui")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120


def _modules() -> list[Path]:
    return sorted(p for d in PRODUCT for p in (ROOT / d).rglob("*.py"))


def test_no_product_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long


def test_no_function_is_over_120_lines() -> None:
    long = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{p.relative_to(ROOT)}::{node.name}"] = n
    assert not long, long


def _setuptools_config() -> dict[str, Any]:
    """``[tool.setuptools]`` of pyproject.toml (tomllib is 3.11+; the package supports 3.10)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return dict(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"])
    text = (ROOT / "pyproject.toml").read_text()  # pragma: no cover - Python 3.10
    packages = re.findall(r'^\s+"(gputop_trace[\w.]*)",$', text.split("packages = [", 1)[1].split("]", 1)[0], re.M)
    block = text.split("[tool.setuptools.package-dir]", 1)[1].split("\n\n", 1)[0]
    return {"packages": packages, "package-dir": dict(re.findall(r'^"([\w.]+)" = "([\w/]+)"$', block, re.M))}


def test_the_only_mapped_folders_are_parsers_analysis_and_tui() -> None:
    cfg = _setuptools_config()
    assert cfg["package-dir"] == {
        "gputop_trace.parsers": "parsers",
        "gputop_trace.analysis": "analysis",
        "gputop_trace.tui": "tui",
    }
    # every other package's folder is its import path
    for pkg in cfg["packages"]:
        if pkg.split(".")[:2] in (["gputop_trace", "parsers"], ["gputop_trace", "analysis"], ["gputop_trace", "tui"]):
            continue
        assert (ROOT / pkg.replace(".", "/") / "__init__.py").is_file(), pkg
    first = (ROOT / "docs" / "architecture.md").read_text().split("\n\n")[1]
    assert "gputop_trace/" in first and "only mapping" in first


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    packages = set(_setuptools_config()["packages"])
    found = set()
    for d in PRODUCT:
        for init in (ROOT / d).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(rel if d == "gputop_trace" else ("gputop_trace", *rel)))
    assert found == packages, (found - packages, packages - found)
