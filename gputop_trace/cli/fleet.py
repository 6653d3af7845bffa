"""``gputop-trace fleet PATHS...``: many per-rank traces summarised in parallel (process pool or Dask cluster),
matched across ranks, with the ranks and idle causes that stand out.

Exit codes: 0 when the fleet was analysed, even if some ranks failed (they are listed under ``errors``, and a
warning on stderr says how many); 2 when nothing could be analysed (no trace matched, every rank failed, the
Dask scheduler is unreachable, the output cannot be written); 70 for an internal error outside the per-rank
work (a rank's own internal error is an error row plus a warning)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.errors import TraceError
from gputop_trace.units import plural

if TYPE_CHECKING:
    from rich.console import Console

    from gputop_trace.analysis.fleet.rank_summary import RankSummary


def register(sub: Any) -> None:
    """Add the ``fleet`` parser."""
    p = sub.add_parser(
        "fleet",
        help="analyse many per-rank traces in parallel (process pool or Dask cluster): outlier and straggler ranks",
        description="Summarise every rank's trace where it lies (a local process pool, or the workers of an "
        "existing Dask cluster reading shared storage), then match collectives across ranks and report the ranks "
        "whose step time or collective arrival is an outlier, the slowest and most waited-on ranks, and the idle "
        "causes that dominate across the fleet. Only small per-rank summaries travel, never the traces.",
        epilog="Exit codes: 0 the fleet was analysed (failed ranks are listed under errors, with a warning); 2 "
        "nothing could be analysed (no trace found, every rank failed, scheduler unreachable); 70 internal error. "
        "Write --out fleet.parquet and open it with 'gputop-trace view fleet.parquet'.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="per-rank trace files, directories of them, or quoted glob patterns ('traces/**/*.json.gz')",
    )
    p.add_argument(
        "--executor",
        default="processes",
        metavar="local|processes|dask://HOST:PORT|dask-local",
        help="where the per-rank work runs: this process, a local process pool (default), an existing Dask "
        "scheduler whose workers see the same paths, or a throwaway local Dask cluster",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes for 'processes' and 'dask-local' (default: min(cores, files, memory / largest file's need))",
    )
    p.add_argument("--out", metavar="FILE.parquet", help="write one row per rank (and the findings) as Parquet")
    p.add_argument("--json", action="store_true", help="print the fleet document as JSON (see the README)")
    p.add_argument(
        "--gap-threshold",
        type=common.duration_arg,
        default=20_000,
        metavar="DURATION",
        help="shortest GPU idle gap counted in the idle causes (default 20us)",
    )
    p.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="memory the process pool may assume (like 64GB); "
        "also the per-file limit each worker checks before loading",
    )
    p.add_argument(
        "--connect-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to try reaching a Dask scheduler (default 30)",
    )
    p.add_argument("--top", type=int, default=20, metavar="N", help="ranks shown in the text table (0: all)")
    p.set_defaults(func=run)


def _max_memory(text: str | None) -> int | None:
    if text is None:
        return None
    from gputop_trace.units import parse_size_bytes

    try:
        return parse_size_bytes(text)
    except ValueError as e:
        raise TraceError(f"--max-memory: {e}.") from None


def analyse(args: argparse.Namespace) -> tuple[dict[str, Any], list[RankSummary]]:
    """Run the fleet: expand paths, summarise every rank on the executor, match, find; the document + summaries."""
    from gputop_trace.analysis.fleet.analyse import analyse_fleet
    from gputop_trace.analysis.fleet.rank_summary import SummaryOptions
    from gputop_trace.fleet.executors import expand_paths, plan_jobs, run_jobs
    from gputop_trace.fleet.table import assign_ranks, fleet_document, fleet_warnings

    if args.workers is not None and args.workers < 1:
        raise TraceError("--workers must be at least 1.")
    if args.out:
        _check_writable(args.out)  # before a long run, not after it
    files = expand_paths(args.paths)
    jobs = plan_jobs(files)
    options = SummaryOptions(gap_threshold_ns=args.gap_threshold, max_memory=_max_memory(args.max_memory))
    t0 = time.perf_counter()
    with _Progress(len(jobs)) as on_result:
        per_file = run_jobs(args.executor, jobs, options, on_result, args.workers, args.connect_timeout)
    elapsed = time.perf_counter() - t0
    summaries, renumbered = assign_ranks(per_file)
    if not any(s.ok for s in summaries):
        first = next(s for s in summaries if not s.ok)
        raise TraceError(
            f"None of the {len(summaries)} trace(s) could be analysed. The first error: {first.error}",
            path=first.path,
        )
    report = analyse_fleet(summaries)
    doc = fleet_document(
        summaries,
        report,
        files,
        executor=args.executor,
        elapsed_s=elapsed,
        warnings=[*renumbered, *fleet_warnings(summaries)],
    )
    return doc, summaries


def _check_writable(path: str) -> None:
    import os

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise TraceError(
            f"Cannot write --out {path}: "
            + ("it is a directory" if os.path.isdir(path) else f"{folder} does not exist or is not writable")
            + ". Choose a file path in a writable folder, like --out fleet.parquet."
        )


def run(args: argparse.Namespace) -> int:
    """Analyse, write Parquet when asked, print text or JSON; warnings on stderr."""
    doc, summaries = analyse(args)
    if args.out:
        from gputop_trace.fleet.parquet import write_fleet

        write_fleet(args.out, doc, summaries)
    if args.json:
        common.emit_json(doc)
    else:
        render(doc, top=args.top, out=args.out)
    _warn(doc)
    return 0


class _Progress:
    """A Rich progress bar on stderr (when it is a terminal) fed by the executors' ``on_result``."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(
            TextColumn("files"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[bad]}"),
            TimeElapsedColumn(),
            transient=True,
            console=Console(stderr=True),
        )
        self.bar.start()
        task = self.bar.add_task("files", total=self.total, bad="")
        failed = [0]

        def on_result(summaries: list[RankSummary]) -> None:
            failed[0] += sum(0 if s.ok else 1 for s in summaries)
            self.bar.update(task, advance=1, bad=f"{failed[0]} failed" if failed[0] else "")

        return on_result

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _warn(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.text import Text

    from gputop_trace.safe_text import clean

    con = Console(stderr=True, highlight=False, soft_wrap=False)
    for w in doc["warnings"]:
        con.print(Text("warning: ", style="yellow") + Text(clean(w)))


def render(doc: dict[str, Any], *, top: int = 20, out: str | None = None, console: Console | None = None) -> None:
    """The fleet as text: what ran, the findings, the ranks table (outliers and slowest first), the errors."""
    from rich.text import Text

    from gputop_trace.cli.summary import render_findings
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_bytes, format_ns

    con = console or common.stdout_console()
    fl = doc["fleet"]
    con.print(
        Text("gputop-trace fleet  ", style="bold")
        + Text(
            f"{plural(len(doc['ranks']), 'rank')} analysed, {fl['failed']} failed, "
            f"{format_bytes(fl['bytes'])} of traces in {fl['elapsed_s']:.1f} s on {clean(fl['executor'])} "
            f"({fl['ranks_per_min']:.0f} ranks/min)"
        )
    )
    if fl.get("median_step_ns") is not None:
        con.print(
            Text(
                f"median step {format_ns(fl['median_step_ns'])}; {plural(fl['collective_instances'], 'collective')} "
                f"matched across {plural(fl['ranks_with_collectives'], 'rank')}"
            )
        )
    render_findings(con, doc["findings"])
    con.print(ranks_table(doc["ranks"], top=top))
    con.print(
        Text(
            "step: mean step time; busy: GPU busy share; top idle: largest idle cause; collect.: time in collective "
            "kernels; waiting: inside them for later ranks; late: mean arrival after the median rank (z: robust "
            "z-score); made wait: the others' waiting while this rank was last; !: outlier.",
            style="dim",
        )
    )
    if top and len(doc["ranks"]) > top:
        con.print(
            Text(
                f"… {len(doc['ranks']) - top} more ranks (--top 0 shows all; --out fleet.parquet keeps them)",
                style="dim",
            )
        )
    for e in doc["errors"]:
        con.print(Text(f"rank {e['rank']} failed: ", style="red") + Text(clean(e["error"] or "")))
    if out:
        con.print(Text(f"wrote {clean(out)}: open it with gputop-trace view {clean(out)}", style="dim"), soft_wrap=True)


def rank_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks in the order the text table shows them: outliers first (latest first), then slowest steps first."""

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        flagged = bool(r["late_outlier"] or r["step_outlier"])
        return (not flagged, -(r["arrival_z"] or 0.0) if flagged else 0.0, -(r["mean_step_ns"] or 0), r["rank"])

    return sorted(rows, key=key)


def ranks_table(rows: list[dict[str, Any]], *, top: int = 20) -> Any:
    """Rich table of the ranks (outliers marked ``!``), in :func:`rank_order`."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.analysis.gaps.causes import CAUSE_SHORT
    from gputop_trace.units import format_ns

    order = rank_order(rows)
    shown = order[:top] if top else order
    t = Table(
        title="Ranks", title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, padding=0
    )
    widths = {
        "rank": 5,
        "step": 8,
        "busy": 4,
        "top idle": 9,
        "collect.": 8,
        "waiting": 8,
        "late": 8,
        "z": 5,
        "made wait": 9,
    }
    for c, w in widths.items():
        t.add_column(c, justify="left" if c == "top idle" else "right", no_wrap=True, min_width=w)
    for r in shown:
        causes = sorted(r["idle_by_cause"].items(), key=lambda kv: -kv[1]["total_ns"])
        cause = CAUSE_SHORT.get(causes[0][0], causes[0][0]) if causes and causes[0][1]["total_ns"] else "-"
        flag = "!" if r["late_outlier"] or r["step_outlier"] else ""
        t.add_row(
            Text(f"{flag}{r['rank']}", style="bold red" if flag else ""),
            format_ns(r["mean_step_ns"]) if r["mean_step_ns"] is not None else "-",
            f"{r['busy_pct']:.0f}%",
            cause,
            format_ns(r["collective_ns"]),
            format_ns(r["collective_wait_ns"]),
            format_ns(r["arrival_late_ns"]) if r["arrival_late_ns"] is not None else "-",
            _z(r["arrival_z"]),
            format_ns(r["imposed_wait_ns"]),
        )
    return t


def _z(z: float | None) -> str:
    if z is None:
        return "-"
    return f"{z:.0f}" if abs(z) >= 100 else f"{z:.1f}"
