"""The check that stops pytest at once, with one paragraph and the command that fixes it, when the package the
tests import is not this checkout's editable install (tests/install_check.py, run by tests/conftest.py)."""

from __future__ import annotations

from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from tests.install_check import SUPPORTED_INSTALL, SpecFinder, install_problem
from tests.paths import ROOT


def _finder(found: dict[str, Path]) -> SpecFinder:
    """A stand-in ``find_spec``: a package spec for each name found, in its folder; None for any other name."""

    def find_spec(name: str) -> ModuleSpec | None:
        if name not in found:
            return None
        spec = ModuleSpec(name, None, origin=str(found[name] / "__init__.py"), is_package=True)
        spec.submodule_search_locations = [str(found[name])]
        return spec

    return find_spec


def _problem(root: Path, found: dict[str, Path]) -> str | None:
    return install_problem(root, _finder(found))


def test_this_checkout_installed_editable_is_no_problem() -> None:
    assert install_problem(ROOT) is None  # the real one: this suite runs from an editable install
    root = Path("/src/checkout")
    assert _problem(root, {"gputop_trace": root / "gputop_trace", "gputop_trace.parsers": root / "parsers"}) is None


@pytest.mark.parametrize(
    ("found", "says"),
    [
        # a plain `pip install .` (or none): the checkout's gputop_trace/ is imported and lacks the mapped folders
        ({"gputop_trace": Path("/src/checkout/gputop_trace")}, "gputop_trace.parsers is missing"),
        # another checkout installed editable: its parsers/ would be tested with this checkout's code
        (
            {"gputop_trace": Path("/src/checkout/gputop_trace"), "gputop_trace.parsers": Path("/src/other/parsers")},
            "comes from /src/other/parsers, another checkout",
        ),
        # an installed copy imported instead of the checkout's
        ({"gputop_trace": Path("/venv/site-packages/gputop_trace")}, "imported from /venv/site-packages/gputop_trace"),
        ({}, "is not importable at all"),
    ],
)
def test_a_wrong_install_is_one_paragraph_ending_with_the_one_command(found: dict[str, Path], says: str) -> None:
    problem = _problem(Path("/src/checkout"), found)
    assert problem is not None
    assert says in problem
    assert "\n" not in problem
    assert problem.startswith("The tests cannot run against this checkout (/src/checkout)")
    assert problem.endswith(f"{SUPPORTED_INSTALL}   then run pytest again.")
    assert SUPPORTED_INSTALL == "python3 -m pip install -e '.[test]'"
