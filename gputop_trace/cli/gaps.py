"""``gputop-trace gaps PATH``: GPU idle gaps and what the host was doing during them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.units import plural

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.analysis.gaps.detect import DeviceGaps, Gap
    from gputop_trace.model.trace import Trace

DEFAULT_LIMIT = 20
CSV_COLUMNS = (
    "rank",
    "device",
    "pid",
    "start_ns",
    "dur_ns",
    "cause",
    "range",
    "launch",
    "thread",
    "next_op",
    "next_op_stream",
    "detail",
)


def register(sub: Any) -> None:
    """Add the ``gaps`` parser."""
    p = sub.add_parser(
        "gaps",
        help="GPU idle gaps, attributed to what the host was doing",
        description="List the holes in each GPU's busy time (kernels, copies, memsets on every stream) of at least "
        "--gap-threshold, longest first, each attributed: sync stall, blocked in an OS call, data loading, "
        "CPU-bound, untraced host time, or a GPU-side dependency. --json times are integer ns in the file's own "
        "time base (nsys: as stored; Chrome/Kineto/JAX: the file's µs × 1000), so '--gap-threshold 1ms --json' "
        "lists the same gaps as 'nsys analyze -r gpu_gaps:gap=1'.",
    )
    common.add_paths(p)
    common.add_output(p)
    common.add_filters(p)
    p.add_argument(
        "--gap-threshold",
        type=common.duration_arg,
        default=None,
        metavar="TIME",
        help="report gaps at least this long (units: ns, us, ms, s; default 20us)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"gaps shown per GPU in the table (default {DEFAULT_LIMIT}; 0 = all; --json/--csv list all)",
    )
    p.set_defaults(func=run)


def build(trace: Trace, paths: list[str], gaps: list[DeviceGaps], threshold_ns: int) -> dict[str, Any]:
    """The ``gaps`` JSON document."""
    from gputop_trace.analysis.stream_idle import stream_idle_breakdown
    from gputop_trace.report.analysis_json import device_gaps_json
    from gputop_trace.report.envelope import envelope

    keep = {(d.rank, d.device) for d in gaps}
    return envelope(
        "gaps",
        trace,
        paths,
        threshold_ns=threshold_ns,
        devices=[device_gaps_json(trace, d) for d in gaps],
        streams=[
            {
                "rank": r.rank,
                "device": r.device,
                "stream": r.stream,
                "ops": r.ops,
                "idle_ns": r.idle_ns,
                "host_wait_ns": r.host_wait_ns,
                "kernel_wait_ns": r.kernel_wait_ns,
                "other_ns": r.other_ns,
            }
            for r in stream_idle_breakdown(trace)
            if (r.rank, r.device) in keep
        ],
    )


def run(args: argparse.Namespace) -> int:
    """Load, find gaps, print."""
    from gputop_trace.analysis.gaps.detect import DEFAULT_THRESHOLD_NS, find_gaps

    trace = common.load(args)
    threshold = DEFAULT_THRESHOLD_NS if args.gap_threshold is None else int(args.gap_threshold)
    gaps = find_gaps(trace, threshold, rank=args.rank, device=args.device)
    if args.json:
        common.emit_json(build(trace, args.paths, gaps, threshold))
        return 0
    if args.csv:
        import sys

        from gputop_trace.report.analysis_json import gap_json
        from gputop_trace.report.envelope import to_csv

        rows = []
        for d in gaps:
            for g in d.longest(len(d.columns)):
                j = gap_json(trace, g)
                launch = j["launch"] or {}
                rows.append({**j, "launch": launch.get("name"), "thread": launch.get("thread")})
        sys.stdout.write(to_csv(rows, CSV_COLUMNS))
        return 0
    render(trace, gaps, threshold, args.limit, filtered=args.device is not None or args.rank is not None)
    return 0


def _device_heading(trace: Trace, d: DeviceGaps, threshold_ns: int, multi_rank: bool) -> Text:
    """A device's line: its active span, busy and idle time (and % of the span), its gaps of ``threshold_ns`` (ns)
    or more."""
    from rich.text import Text

    from gputop_trace.units import format_ns

    label = trace.device_label(d.rank, d.device)
    label = f"rank {d.rank} {label}" if multi_rank else label
    return Text(f"{label} (pid {d.pid})", style="bold") + Text(
        f"  active {format_ns(d.span_ns)}, busy {format_ns(d.busy_ns)} ({d.busy_pct:.1f}%), idle "
        f"{format_ns(d.idle_ns)} ({d.idle_pct:.1f}%); {plural(len(d.columns), 'gap')} ≥ "
        f"{format_ns(threshold_ns)} = "
        f"{format_ns(d.gaps_ns)}"
    )


def _cause_table(d: DeviceGaps) -> Table:
    """A device's idle time by cause: gaps, time, % of its active span, the largest cause first."""
    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.units import format_ns

    causes = compact_table("Idle time by cause")
    causes.add_column("cause", no_wrap=True)
    causes.add_column("gaps", justify="right", no_wrap=True)
    add_number_columns(causes, "time", "% of active")
    for ct in sorted(d.by_cause.values(), key=lambda c: -c.total_ns):
        if ct.count:
            causes.add_row(
                ct.label,
                f"{ct.count:,}",
                format_ns(ct.total_ns),
                f"{100.0 * ct.total_ns / d.span_ns:.1f}" if d.span_ns else "-",
            )
    return causes


def _length_table(d: DeviceGaps) -> Table:
    """A device's idle holes (all of them, under the threshold too) by length: count and total time per bin."""
    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.units import format_ns

    hist = compact_table("Idle holes by length (all holes)")
    hist.add_column("length", no_wrap=True)
    hist.add_column("holes", justify="right", no_wrap=True)
    add_number_columns(hist, "time")
    for lab, n, tot in zip(d.histogram.labels(), d.histogram.counts, d.histogram.total_ns, strict=True):
        if n:
            hist.add_row(lab, f"{n:,}", format_ns(tot))
    return hist


def _longest_table(trace: Trace, d: DeviceGaps, shown: list[Gap], *, wide: bool, terminal: bool) -> Table:
    """The longest gaps ``shown``: where (from the trace start), how long, their cause and what happened; ``wide``
    (140 columns or more) adds the enclosing range and the next device op."""
    from rich.text import Text

    from gputop_trace.analysis.gaps.causes import cause_label
    from gputop_trace.analysis.kernels import short_name
    from gputop_trace.cli.pipe_output import cut_at
    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.model.kinds import Kind
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    t = compact_table(f"Longest gaps ({len(shown)} of {len(d.columns):,})")
    add_number_columns(t, "at", "length")
    t.add_column("cause", no_wrap=True, min_width=10)
    if wide:
        t.add_column("range", overflow="ellipsis", no_wrap=True, max_width=cut_at(terminal, 24))
    t.add_column("what happened", overflow="fold", ratio=1)
    if wide:
        t.add_column(
            f"next {trace.device_words().noun} op",
            overflow="ellipsis",
            no_wrap=True,
            max_width=cut_at(terminal, 32),
        )
    for g in shown:
        cells: list[Any] = [format_ns(g.start_ns), format_ns(g.dur_ns), cause_label(g.cause, g.words, short=True)]
        if wide:
            cells.append(Text(clean(g.range_name or "")))
        cells.append(Text(clean(g.detail)))
        if wide:
            nxt = trace.event_name(g.next_op)
            cells.append(Text(clean(short_name(nxt) if trace.kind[g.next_op] == Kind.KERNEL else nxt)))
        t.add_row(*cells)
    return t


def render(trace: Trace, gaps: list[DeviceGaps], threshold_ns: int, limit: int, *, filtered: bool = False) -> None:
    """Print per-GPU idle summaries, cause totals, the gap-length histogram and the longest gaps."""
    from rich.text import Text

    from gputop_trace.analysis.gaps.detect import LAUNCH_GAP_NS
    from gputop_trace.units import format_ns

    con = common.stdout_console()
    if not gaps:
        noun = trace.device_words().noun
        where = f"on the selected {noun}/rank" if filtered else "in this profile"
        con.print(Text(f"No {noun} activity {where} (no kernel, copy or memset): no gaps to find.", style="yellow"))
        common.print_warnings(con, trace)
        return
    multi_rank = len({d.rank for d in gaps}) > 1
    for d in gaps:
        con.print(_device_heading(trace, d, threshold_ns, multi_rank))
        con.print(_cause_table(d))
        con.print(_length_table(d))
        if d.launch_bound:
            con.print(
                Text(
                    f"launch-bound: {d.short_gaps:,} holes under {format_ns(LAUNCH_GAP_NS)} between short kernels "
                    f"({format_ns(d.short_gaps_ns)})",
                    style="yellow",
                )
            )
        shown = d.longest(limit if limit > 0 else len(d.columns))
        if not shown:
            continue
        con.print(_longest_table(trace, d, shown, wide=con.width >= 140, terminal=con.is_terminal))
        con.print()
    con.print(
        Text(
            "'at' is the time from the start of the trace. Causes: the launching thread's activity from the gap start "
            "to the next launch (see docs/analyses.md).",
            style="dim",
        )
    )
    common.print_warnings(con, trace)
