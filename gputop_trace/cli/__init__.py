"""Sub-commands of the command line. Each module has ``register(subparsers)`` that adds its parser and sets
``func(args) -> exit code``; heavy imports happen inside ``func`` so that ``--help`` stays fast."""

from __future__ import annotations

from types import ModuleType

from gputop_trace.cli import (
    critical_path,
    diff,
    fleet,
    gaps,
    kernels,
    ncu,
    ops,
    ranges,
    ranks,
    record,
    summary,
    transfers,
    view,
)

COMMANDS: tuple[ModuleType, ...] = (
    view,
    summary,
    kernels,
    gaps,
    transfers,
    ranges,
    ops,
    ranks,
    critical_path,
    fleet,
    diff,
    ncu,
    record,
)
