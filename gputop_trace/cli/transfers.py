"""``gputop-trace transfers PATH``: copy and memset overlap with kernels, exposed copy time, and copy flags."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.units import plural

if TYPE_CHECKING:
    from rich.table import Table

    from gputop_trace.analysis.transfers import CopyRow, TransferReport
    from gputop_trace.model.trace import Trace

DEFAULT_LIMIT = 20
CSV_COLUMNS = (
    "rank",
    "device",
    "stream",
    "start_ns",
    "dur_ns",
    "kind",
    "direction",
    "host_memory",
    "bytes",
    "overlap_ns",
    "exposed_ns",
    "hidden_pct",
    "gbps",
    "async",
    "api",
    "range",
    "flags",
)


def register(sub: Any) -> None:
    """Add the ``transfers`` parser."""
    p = sub.add_parser(
        "transfers",
        help="copies and memsets: time hidden behind kernels, exposed time, and what to fix",
        description="For every memcpy and memset: how much of it overlapped with kernels on other streams of the "
        "same GPU (hidden) and how much did not (exposed); totals per direction and host-memory kind; the device's "
        "exposed copy time; and flags (async copies from pageable memory, synchronous copies, copies on the compute "
        "stream, synchronous memsets) with the copies that raised them and a fix. --json times are integer ns in "
        "the file's own time base.",
    )
    common.add_paths(p)
    common.add_output(p)
    common.add_filters(p)
    p.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"copies shown in the table, most exposed first (default {DEFAULT_LIMIT}; 0 = all)",
    )
    p.set_defaults(func=run)


def build(trace: Trace, paths: list[str], rep: TransferReport) -> dict[str, Any]:
    """The ``transfers`` JSON document."""
    from gputop_trace.report.analysis_json import transfers_json
    from gputop_trace.report.envelope import envelope

    return envelope("transfers", trace, paths, **transfers_json(trace, rep))


def run(args: argparse.Namespace) -> int:
    """Load, analyse, print."""
    from gputop_trace.analysis.transfers import transfer_overlap

    trace = common.load(args)
    rep = transfer_overlap(trace, rank=args.rank, device=args.device)
    if args.json:
        common.emit_json(build(trace, args.paths, rep))
        return 0
    if args.csv:
        import sys

        from gputop_trace.report.analysis_json import copy_json
        from gputop_trace.report.envelope import to_csv

        sys.stdout.write(to_csv([copy_json(trace, r) for r in rep.copies], CSV_COLUMNS))
        return 0
    render(trace, rep, args.limit)
    return 0


def _direction_table(rep: TransferReport) -> Table:
    """Copies by direction and host memory: count, bytes, time (ns), exposed time, % hidden under kernels, GB/s."""
    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.units import format_bytes, format_ns

    t = compact_table("By direction and host memory")
    t.add_column("dir", no_wrap=True)
    t.add_column("host", no_wrap=True)
    t.add_column("n", justify="right", no_wrap=True)
    add_number_columns(t, "bytes", width=8)
    add_number_columns(t, "time", "exposed", "hid %", "GB/s")
    for dr in rep.by_direction:
        t.add_row(
            dr.direction,
            dr.host_memory or "-",
            f"{dr.count:,}",
            format_bytes(dr.bytes),
            format_ns(dr.time_ns),
            format_ns(dr.exposed_ns),
            f"{dr.hidden_pct:.0f}",
            f"{dr.bytes_per_s / 1e9:.2f}" if dr.direction != "memset" else "-",
        )
    return t


def _exposed_table(rep: TransferReport, shown: list[CopyRow], *, wide: bool) -> Table:
    """The most exposed copies ``shown``: where (from the trace start), how long, exposed, direction, bytes, stream,
    range; ``wide`` (120 columns or more) adds the % hidden and the flags."""
    from rich.text import Text

    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_bytes, format_ns

    ct = compact_table(f"Most exposed copies ({len(shown)} of {len(rep.columns):,})")
    add_number_columns(ct, "at", "dur", "exposed")
    # headers never shrink (a narrow terminal cut "strm" to "s…")
    ct.add_column("dir", no_wrap=True, min_width=len("dir"))
    ct.add_column("host", no_wrap=True, min_width=len("host"))
    add_number_columns(ct, "bytes", width=8)
    ct.add_column("strm", justify="right", no_wrap=True, min_width=len("strm"))
    ct.add_column("range", overflow="ellipsis", no_wrap=True, min_width=8)
    if wide:
        ct.add_column("hid %", justify="right", no_wrap=True)
        ct.add_column("flags", overflow="fold")
    for r in shown:
        cells: list[Any] = [
            format_ns(r.start_ns),
            format_ns(r.dur_ns),
            format_ns(r.exposed_ns),
            r.direction,
            r.host_memory or "-",
            format_bytes(r.bytes),
            str(r.stream),
            Text(clean(r.range_name or "")),
        ]
        if wide:
            cells += [f"{r.hidden_pct:.0f}", ", ".join(r.flags)]
        ct.add_row(*cells)
    return ct


def render(trace: Trace, rep: TransferReport, limit: int) -> None:
    """Print device totals, per-direction totals, flags with their fix, and the most exposed copies."""
    from rich.text import Text

    from gputop_trace.units import format_ns

    con = common.stdout_console()
    if not rep.columns.event.size and not rep.uvm_events.size:
        con.print(Text("No copies or memsets in this profile.", style="yellow"))
        common.print_warnings(con, trace)
        return
    multi_rank = len({d.rank for d in rep.devices}) > 1
    for d in rep.devices:
        label = trace.device_label(d.rank, d.device)
        label = f"rank {d.rank} {label}" if multi_rank else label
        con.print(
            Text(f"{label}", style="bold")
            + Text(
                f"  {plural(d.copies, 'copy/memset', 'copies/memsets')}, {format_ns(d.copy_ns)} of copy time, "
                f"{format_ns(d.exposed_ns)} exposed (not under any kernel)"
            )
        )
    con.print(_direction_table(rep))
    if rep.flags:
        con.print(Text("Flags", style="bold"))
        for f in rep.flags:
            con.print(
                Text(f"  {f.title}: ", style="yellow")
                + Text(f"{plural(f.count, 'copy', 'copies')}, {format_ns(f.exposed_ns)} exposed. ")
                + Text(f.fix)
            )
    else:
        con.print(Text("No copy flags raised.", style="green"))
    shown = rep.most_exposed(limit if limit > 0 else None)
    if shown:
        con.print(_exposed_table(rep, shown, wide=con.width >= 120))
    if len(rep.uvm_events):
        con.print(
            Text(
                f"{len(rep.uvm_events):,} unified-memory migrations (listed with --json; never counted as exposed "
                "transfers)."
            )
        )
    con.print(Text("'at' is the time from the start of the trace.", style="dim"))
    common.print_warnings(con, trace)
