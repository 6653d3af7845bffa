"""``gputop-trace view [PATH ...]``: the keyboard-driven timeline browser (no PATH: the bundled sample; a fleet
Parquet file from ``gputop-trace fleet --out``: the fleet screen, where Enter opens a rank's trace).

Textual is imported only when the command runs, so ``--help`` and the other commands stay fast."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gputop_trace.cli import common
from gputop_trace.errors import TraceError


def register(sub: Any) -> None:
    """Add the ``view`` parser."""
    p = sub.add_parser(
        "view",
        help="open the trace in the terminal timeline browser (no PATH: the bundled sample)",
        description="Browse a trace in the terminal: timeline of GPU streams and CPU threads, kernels, idle gaps, "
        "transfers, ranges, findings and ranks, all from the keyboard (press ? inside for the keys). With no PATH "
        "it opens the bundled sample trace; given a fleet Parquet file (gputop-trace fleet --out) it lists the "
        "ranks, and Enter opens one.",
    )
    common.add_paths(p, optional=True)
    common.add_inductor_dir(p)
    p.add_argument(
        "--diff",
        action="store_true",
        help="compare two runs: view --diff BASE TEST opens the Diff view (as gputop-trace diff --view BASE TEST); "
        "two trace files that cannot be ranks of one job (both rank 0, or another world size or GPU model) open "
        "there without it",
    )
    p.set_defaults(func=run)


def make_app(
    paths: list[str],
    *,
    max_memory: int | None = None,
    use_cache: bool = True,
    include_python: bool = True,
    inductor_dir: str | None = None,
) -> Any:
    """The app for ``paths``: the fleet screen for a fleet Parquet file (``gputop-trace fleet --out``), else the
    timeline of the traces (``max_memory``: bytes the load may use, see :mod:`gputop_trace.load.resources`). A Parquet
    file that is not a fleet, or one given with other paths, is a :class:`TraceError`."""
    from gputop_trace.fleet.parquet import is_fleet_parquet

    fleets = [p for p in paths if is_fleet_parquet(p)]
    if fleets and len(paths) > 1:
        raise TraceError(
            f"{fleets[0]} is a fleet Parquet file: open it on its own (gputop-trace view {fleets[0]}); Enter on a "
            "rank there opens that rank's trace.",
            path=fleets[0],
        )
    from gputop_trace.tui.app import GputopApp

    if fleets:
        from gputop_trace.fleet.parquet import read_fleet

        return GputopApp([], fleet=read_fleet(fleets[0]))
    return GputopApp(
        paths, max_memory=max_memory, use_cache=use_cache, include_python=include_python, inductor_dir=inductor_dir
    )


def run(args: argparse.Namespace) -> int:
    """Start the app; returns its exit code (0 after q, 2 when the trace could not be opened)."""
    paths: list[str] = list(args.paths)
    if getattr(args, "diff", False) and len(paths) != 2:
        raise TraceError(
            f"view --diff compares two runs: give BASE and TEST (got {len(paths)} "
            f"path{'s' if len(paths) != 1 else ''})."
        )
    if not paths:
        from gputop_trace.load.samples import default_sample

        paths = [default_sample()]
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise TraceError(
            "gputop-trace view needs an interactive terminal (stdin and stdout must be a TTY). For output a "
            "script can read, use 'gputop-trace summary PATH --json'.",
        )
    if getattr(args, "diff", False) or _two_runs(paths, use_cache=not getattr(args, "no_cache", False)):
        from gputop_trace.tui.diff_app import DiffApp

        opts = {
            "use_cache": not getattr(args, "no_cache", False),
            "include_python": not getattr(args, "no_python", False),
        }
        diff_app = DiffApp([paths[0]], [paths[1]], max_memory=getattr(args, "max_memory", None), **opts)
        diff_app.run()
        return int(diff_app.return_code or 0)
    app = make_app(
        paths,
        max_memory=getattr(args, "max_memory", None),
        use_cache=not getattr(args, "no_cache", False),
        include_python=not getattr(args, "no_python", False),
        inductor_dir=getattr(args, "inductor_dir", None),
    )
    app.run()
    return int(app.return_code or 0)


def _two_runs(paths: list[str], *, use_cache: bool) -> bool:
    """Whether ``view A B`` names two runs to compare rather than two ranks of one job: two trace files that
    cannot be ranks of one job (they claim the same rank, or their world size, backend, process groups or GPU
    model differ; :func:`gputop_trace.load.loader.not_one_job`). A file that cannot be read leaves the decision to
    the timeline, which explains the error."""
    import os

    if len(paths) != 2 or any(os.path.isdir(p) for p in paths):
        return False
    from gputop_trace.load.loader import load_file, not_one_job

    try:
        traces = [load_file(p, use_cache=use_cache) for p in paths]
    except TraceError:
        return False
    ranks = [r for t in traces for r in t.meta.ranks]
    return len(set(ranks)) != len(ranks) or not_one_job(traces, paths) is not None
