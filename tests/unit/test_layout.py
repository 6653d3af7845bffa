"""The package's layout: import path = file path, the three mapped folders, every package folder in the wheel (issue
13). The shape of the code itself (functions of at most 80 lines, no private names imported across modules) is
tests/unit/test_code_shape.py's: issue 36 replaced the 600-line module cap, which cut concepts where a count ran out,
with those rules."""

from __future__ import annotations

import re
import sys
from typing import Any

from tests.paths import ROOT

PRODUCT = ("gputop_trace", "parsers", "analysis", "tui")


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
