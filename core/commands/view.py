"""``gputop-trace view [PATH ...]``: the keyboard-driven timeline browser (no PATH: the bundled sample).

Textual is imported only when the command runs, so ``--help`` and the other commands stay fast."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gputop_trace.commands import common
from gputop_trace.errors import TraceError


def register(sub: Any) -> None:
    """Add the ``view`` parser."""
    p = sub.add_parser(
        "view",
        help="open the trace in the terminal timeline browser (no PATH: the bundled sample)",
        description="Browse a trace in the terminal: timeline of GPU streams and CPU threads, kernels, idle gaps, "
        "transfers, ranges and findings, all from the keyboard (press ? inside for the keys). With no PATH it "
        "opens the bundled sample trace.",
    )
    common.add_paths(p, optional=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the app; returns its exit code (0 after q, 2 when the trace could not be opened)."""
    paths: list[str] = list(args.paths)
    if not paths:
        from gputop_trace.samples import default_sample

        paths = [default_sample()]
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise TraceError(
            "gputop-trace view needs an interactive terminal (stdin and stdout must be a TTY). For output a "
            "script can read, use 'gputop-trace summary PATH --json'.",
        )
    from gputop_trace.tui.app import GputopApp

    app = GputopApp(paths, max_memory=args.max_memory)
    app.run()
    return int(app.return_code or 0)
