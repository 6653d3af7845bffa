"""``gputop-trace critical-path PATH``: the chain of work that sets each step's time, and what-ifs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common

if TYPE_CHECKING:
    from rich.console import Console

    from gputop_trace.analysis.critical_path.path import StepPath
    from gputop_trace.model.trace import Trace

#: items shown per step in the text output
TOP_ITEMS = 8


def register(sub: Any) -> None:
    """Add the ``critical-path`` parser."""
    p = sub.add_parser(
        "critical-path",
        help="the chain of work that sets each step's time, with what-ifs",
        description="For every step (ProfilerStep#N, step_N ... ranges; the whole recording when there are none), "
        "the longest dependency chain through CPU operators, launches, kernels, copies, synchronisation, event "
        "waits and (with every rank loaded) collectives, with its breakdown by category and by item, and for the "
        "top items the step time if that item were 2x faster or gone, computed by replaying the dependency "
        "graph. --json times are integer ns in the file's own time base.",
    )
    common.add_paths(p)
    common.add_output(p, csv=False)
    p.add_argument("--step", type=int, metavar="N", help="only step N (0-based per rank, as 'summary' numbers them)")
    p.add_argument("--rank", type=int, metavar="R", help="only rank R")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, find the critical paths, print."""
    from gputop_trace.analysis.critical_path.path import critical_paths
    from gputop_trace.errors import TraceError

    trace = common.load(args)
    if args.step is not None and args.step < 0:
        raise TraceError(f"--step {args.step}: steps are numbered from 0.")
    paths = critical_paths(trace, step=args.step, rank=args.rank)
    if not paths and (args.step is not None or args.rank is not None):
        every = critical_paths(trace, what_if=False)
        have = sorted({(p.rank, p.step) for p in every})
        ranks = sorted({r for r, _ in have})
        if args.rank is not None and args.rank not in ranks:
            raise TraceError(
                f"--rank {args.rank}: this trace has no rank {args.rank} with work; its ranks are "
                f"{', '.join(map(str, ranks)) or 'none'}."
            )
        counts = {r: sum(1 for rr, _ in have if rr == r) for r in ranks}
        told = ", ".join(f"rank {r}: steps 0–{n - 1}" for r, n in counts.items())
        raise TraceError(f"--step {args.step}: no such step ({told or 'the trace has no work'}).")
    if args.json:
        from gputop_trace.report.critical_path_json import critical_path_json
        from gputop_trace.report.envelope import envelope

        common.emit_json(envelope("critical-path", trace, args.paths, steps=critical_path_json(trace, paths)))
        return 0
    con = common.stdout_console()
    if not paths:
        from rich.text import Text

        con.print(
            Text("No CPU operators, runtime calls or GPU work in this profile: no critical path.", style="yellow")
        )
        common.print_warnings(con, trace)
        return 0
    multi_rank = len({p.rank for p in paths}) > 1
    for p in paths:
        render_step(con, trace, p, multi_rank=multi_rank)
    common.print_warnings(con, trace)
    return 0


def render_step(con: Console, trace: Trace, p: StepPath, *, multi_rank: bool) -> None:
    """One step: path length vs step time, breakdown, top items with what-ifs."""
    from rich.text import Text

    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.report.critical_path_json import CATEGORY_TITLES
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    who = f"rank {p.rank} " if multi_rank else ""
    name = f" ({clean(p.step_name)})" if p.step_name else " (whole recording: no step ranges)"
    pct = 100.0 * p.length_ns / p.dur_ns if p.dur_ns else 0.0
    con.print(
        Text(f"{who}step {p.step}{name}", style="bold")
        + Text(f"  step {format_ns(p.dur_ns)}, critical path {format_ns(p.length_ns)} ({pct:.1f}% of the step)")
    )
    for note in p.notes:
        if not note.startswith("no step ranges"):  # the header says it
            con.print(Text(f"  note: {note}", style="dim"))
    if not p.length_ns:
        con.print(Text("  nothing recorded in this step", style="yellow"))
        con.print()
        return
    bd = compact_table()
    bd.add_column("on the path")
    add_number_columns(bd, "time", "share")
    for cat, ns in sorted(p.breakdown.items(), key=lambda kv: -kv[1]):
        if ns:
            bd.add_row(_CATEGORY_WORDS.get(cat, cat), format_ns(ns), f"{100.0 * ns / p.length_ns:.1f}%")
    con.print(bd)
    what = {(w.category, w.item): w for w in p.what_if}
    shown = p.by_item[:TOP_ITEMS]
    # the numbers and the kind keep their widths; the item gets the rest, cut where the names still read apart
    # kind 10, on path 8, share 6, "2x saves" 8, "gone saves" 10, each column after the first 3 wider (the rule)
    name_width = max(16, con.width - (10 + 8 + 6 + 8 + 10) - 5 * 3 - 1)
    from gputop_trace.presentation.kernel_labels import kernel_labels
    from gputop_trace.presentation.name_fitting import fit_names

    # kernels by the app's labels: templates that share a short name (cutlass::Kernel) get their parameters after it
    short = kernel_labels(label for cat, label, _ in shown if cat in ("kernel", "collective"))
    labels = [clean(short[label] if cat in ("kernel", "collective") else label) for cat, label, _ in shown]
    if max((len(x) for x in labels), default=0) > name_width:
        labels = fit_names(labels, name_width)
    items = compact_table()
    items.add_column("item", no_wrap=True, overflow="ellipsis", max_width=name_width)
    items.add_column("kind", no_wrap=True)
    add_number_columns(items, "on path", width=8)
    add_number_columns(items, "share", width=6)
    add_number_columns(items, "2x saves", "gone saves", width=8)
    for (cat, label, ns), text in zip(shown, labels, strict=True):
        w = what.get((cat, label))
        items.add_row(
            Text(text),  # a name is not markup: `[param|cuda]` (a user annotation) would read as a style and vanish
            CATEGORY_TITLES.get(cat, cat),
            format_ns(ns),
            f"{100.0 * ns / p.length_ns:.1f}%",
            format_ns(w.step_ns - w.if_2x_ns) if w else "–",
            format_ns(w.step_ns - w.if_gone_ns) if w else "–",
        )
    con.print(items)
    con.print()


_CATEGORY_WORDS = {
    "cpu_op": "host work (CPU ops)",
    "launch": "launch / runtime calls",
    "kernel": "kernels",
    "copy": "copies",
    "sync_wait": "synchronisation waits",
    "collective": "collectives",
    "idle": "idle",
}
