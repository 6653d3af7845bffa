"""Sub-commands of the command line. Each module has ``register(subparsers)`` that adds its parser and sets
``func(args) -> exit code``; heavy imports happen inside ``func`` so that ``--help`` stays fast. A run imports only
its own command's module (:func:`command_modules`); ``COMMANDS`` (every module, in the order of ``--help``) is
imported when it is first asked for."""

from __future__ import annotations

import importlib
from types import ModuleType

#: the command modules, in the order of ``--help`` (a module is named after its command: ``critical_path`` for
#: ``critical-path``)
COMMAND_NAMES: tuple[str, ...] = (
    "view",
    "summary",
    "kernels",
    "gaps",
    "transfers",
    "ranges",
    "ops",
    "ranks",
    "critical_path",
    "fleet",
    "diff",
    "ncu",
    "record",
)


def command_modules(only: str | None = None) -> tuple[ModuleType, ...]:
    """The module of command ``only`` (as typed: ``critical-path``) alone, or every command's where ``only`` names
    none of them."""
    chosen = [n for n in COMMAND_NAMES if n.replace("_", "-") == only]
    return tuple(importlib.import_module(f"{__name__}.{n}") for n in chosen or COMMAND_NAMES)


def __getattr__(name: str) -> tuple[ModuleType, ...]:
    if name == "COMMANDS":
        return command_modules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["COMMANDS", "COMMAND_NAMES", "command_modules"]
