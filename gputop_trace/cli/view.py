"""``gputop-trace view [PATH ...]``: the keyboard-driven timeline browser (no PATH: the bundled sample; a fleet
Parquet file from ``gputop-trace fleet --out``: the fleet screen, where Enter opens a rank's trace).

Textual is imported only when the command runs, so ``--help`` and the other commands stay fast."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.errors import TraceError

if TYPE_CHECKING:
    from gputop_trace.model.trace import Trace


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
    trace: Trace | None = None,
) -> Any:
    """The app for ``paths``: the fleet screen for a fleet Parquet file (``gputop-trace fleet --out``), else the
    timeline of the traces (``max_memory``: bytes the load may use, see :mod:`gputop_trace.load.resources`;
    ``trace``: already loaded from ``paths``). A Parquet file that is not a fleet, or one given with other paths, is
    a :class:`TraceError`.

    The load starts here, on a thread, before the app is imported: reading the trace, then preparing the timeline
    (:func:`gputop_trace.tui.view.prepared.prepare_view`, on the same thread), overlaps the app's own start (its
    imports take a few tenths of a second), and the app takes the load over (:class:`BackgroundLoad`)."""
    from gputop_trace.fleet.parquet import is_fleet_parquet

    fleets = [p for p in paths if is_fleet_parquet(p)]
    if fleets and len(paths) > 1:
        raise TraceError(
            f"{fleets[0]} is a fleet Parquet file: open it on its own (gputop-trace view {fleets[0]}); Enter on a "
            "rank there opens that rank's trace.",
            path=fleets[0],
        )
    background = None
    if not fleets and trace is None:
        from gputop_trace.load.background import BackgroundLoad

        background = BackgroundLoad(
            paths,
            max_memory=max_memory,
            use_cache=use_cache,
            include_python=include_python,
            then=partial(_prepare_view, inductor_dir=inductor_dir),
        )
    from gputop_trace.tui.app import GputopApp

    if fleets:
        from gputop_trace.fleet.parquet import read_fleet

        return GputopApp([], fleet=read_fleet(fleets[0]))
    return GputopApp(
        paths,
        max_memory=max_memory,
        use_cache=use_cache,
        include_python=include_python,
        trace=trace,
        inductor_dir=inductor_dir,
        background=background,
    )


def _prepare_view(trace: Trace, *, inductor_dir: str | None) -> Any:
    """The timeline of a trace the background load just read, prepared on the load's thread (no Textual)."""
    from gputop_trace.tui.view.prepared import prepare_view

    return prepare_view(trace, inductor_dir)


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
    opts: dict[str, Any] = {
        "max_memory": getattr(args, "max_memory", None),
        "use_cache": not getattr(args, "no_cache", False),
        "include_python": not getattr(args, "no_python", False),
    }
    pair = None if getattr(args, "diff", False) else _load_pair(paths, **opts)
    if getattr(args, "diff", False) or (pair is not None and len(pair) == 2):
        from gputop_trace.tui.diff_app import DiffApp

        runs = pair if pair is not None and len(pair) == 2 else None
        diff_app = DiffApp([paths[0]], [paths[1]], runs=runs, **opts)
        diff_app.run()
        return int(diff_app.return_code or 0)
    app = make_app(
        paths, trace=pair[0] if pair is not None else None, inductor_dir=getattr(args, "inductor_dir", None), **opts
    )
    app.run()
    return int(app.return_code or 0)


def _load_pair(
    paths: list[str], *, max_memory: int | None, use_cache: bool, include_python: bool
) -> tuple[Trace] | tuple[Trace, Trace] | None:
    """``view A B`` with two trace files: both loaded once (a progress bar on stderr), then either two runs to
    compare (``(base, test)``: they cannot be ranks of one job, because they claim the same rank or their world size,
    backend, process groups or GPU model differ; :func:`gputop_trace.load.loader.not_one_job`) or one job
    (``(trace,)``, its ranks joined). None for anything else, and when a file cannot be read or is too large: the
    timeline loads them itself and explains the error."""
    import os

    if len(paths) != 2 or any(os.path.isdir(p) for p in paths):
        return None
    from gputop_trace.fleet.parquet import is_fleet_parquet

    if any(is_fleet_parquet(p) for p in paths):
        return None
    from gputop_trace.load.loader import join_ranks, load_files, not_one_job
    from gputop_trace.load.resources import check_paths

    try:
        check_paths(paths, max_memory)
    except TraceError:
        return None
    with common.load_progress() as progress:
        results = load_files(paths, progress=progress, use_cache=use_cache, include_python=include_python)
    traces = [r for r in results if not isinstance(r, TraceError)]
    if len(traces) != 2:
        return None
    a, b = traces
    ranks = [r for t in traces for r in t.meta.ranks]
    if len(set(ranks)) != len(ranks) or not_one_job(traces, paths) is not None:
        return (a, b)
    return (join_ranks(paths, results),)
