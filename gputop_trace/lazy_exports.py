"""A package's public names, imported when first used (PEP 562 module ``__getattr__``).

A concept package (``gputop_trace.analysis.gaps``, ``.critical_path`` ...) lists its public names in its
``__init__``, but a command that needs one light module of it (the idle causes' labels, say) must not pay for
importing every other module of the package: the command line's start-up is measured (performance.md). So an
``__init__`` declares where each public name lives and :func:`lazy_names` gives it the ``__getattr__`` that imports
the module holding a name the first time the name is read; type checkers read the same names from the
``if TYPE_CHECKING:`` imports beside it (``tests/unit/test_lazy_exports.py`` checks that the two lists agree).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_names(package: str, homes: Mapping[str, tuple[str, ...]]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``: ``homes`` maps each submodule (its last name part) to the public
    names it holds; reading one of those names imports that submodule once and keeps the value in the package."""
    where = {name: module for module, names in homes.items() for name in names}

    def lookup(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return lookup


__all__ = ["lazy_names"]
