"""``gputop-trace summary PATH [--json]``: what the profile holds and where GPU time went."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.commands import common

if TYPE_CHECKING:
    from gputop_trace.model import Trace

TOP_KERNELS = 10


def register(sub: Any) -> None:
    """Add the ``summary`` parser."""
    p = sub.add_parser(
        "summary",
        help="print the findings, GPU busy time and top kernels (text or --json)",
        description="Print what the profile holds and where GPU time went: findings first, then GPU busy time, "
        "top kernels and warnings. With no PATH, summarises the bundled sample trace.",
    )
    common.add_paths(p, optional=True)
    common.add_output(p, csv=False)
    p.set_defaults(func=run)


def build(trace: Trace, paths: list[str]) -> dict[str, Any]:
    """The summary as a JSON-contract document."""
    from gputop_trace.analysis.busy import device_busy
    from gputop_trace.analysis.kernels import kernel_table
    from gputop_trace.commands.kernels_json import kernel_row_json
    from gputop_trace.model import KIND_JSON_KEY, Kind
    from gputop_trace.report import envelope

    counts = {k: 0 for k in ("kernel", "memcpy", "memset", "api", "cpu_op", "range", "python", "other")}
    for kind, n in trace.count_by_kind().items():
        counts[KIND_JSON_KEY.get(Kind(kind), "other")] += n
    devices = []
    for d in device_busy(trace):
        info = trace.gpu_info(d.rank, d.device)
        devices.append(
            {
                "rank": d.rank,
                "device": d.device,
                "name": info.name if info else None,
                "sm_count": info.sm_count if info else None,
                "span_ns": d.span_ns,
                "busy_ns": d.busy_ns,
                "idle_ns": d.idle_ns,
                "busy_pct": round(d.busy_pct, 3),
            }
        )
    return envelope(
        "summary",
        trace,
        paths,
        span_ns=trace.span_ns,
        gpus=[{"rank": g.rank, "device": g.device, "name": g.name, "sm_count": g.sm_count} for g in trace.meta.gpus],
        devices=devices,
        events=counts,
        top_kernels=[kernel_row_json(r) for r in kernel_table(trace)[:TOP_KERNELS]],
        findings=[],
    )


def run(args: argparse.Namespace) -> int:
    """Load, summarise, print."""
    if not args.paths:
        from gputop_trace.samples import default_sample

        args.paths = [default_sample()]
    trace = common.load(args)
    doc = build(trace, args.paths)
    if args.json:
        common.emit_json(doc)
        return 0
    render(doc, trace)
    return 0


def render(doc: dict[str, Any], trace: Trace) -> None:
    """Print the summary with Rich tables."""
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.analysis.kernels import short_name
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    con = common.stdout_console()
    src = doc["source"]
    con.print(Text("gputop-trace summary  ", style="bold") + Text(clean(str(src["path"]))))
    con.print(Text(f"format: {src['format']} — ") + Text(clean(src["producer"])))
    gpus = ", ".join(
        f"{g['device']}: {clean(g['name'])}" + (f" ({g['sm_count']} SMs)" if g["sm_count"] else "") for g in doc["gpus"]
    )
    con.print(Text(f"GPUs: {gpus or 'none recorded'}"))
    con.print(Text(f"ranks: {', '.join(str(r) for r in src['ranks'])}   span: {format_ns(doc['span_ns'])}"))
    ev = ", ".join(f"{k} {v:,}" for k, v in doc["events"].items() if v)
    con.print(Text(f"events: {sum(doc['events'].values()):,} ({ev})"))
    if doc["devices"]:
        t = Table(title="GPU busy time", title_justify="left")
        for c in ("rank", "device", "busy", "idle", "busy %", "active span"):
            t.add_column(c, justify="right")
        for d in doc["devices"]:
            t.add_row(
                str(d["rank"]),
                str(d["device"]),
                format_ns(d["busy_ns"]),
                format_ns(d["idle_ns"]),
                f"{d['busy_pct']:.1f}",
                format_ns(d["span_ns"]),
            )
        con.print(t)
    else:
        con.print(Text("No GPU activity in this profile.", style="yellow"))
    if doc["top_kernels"]:
        t = Table(title=f"Top {len(doc['top_kernels'])} kernels by total time", title_justify="left")
        t.add_column("kernel", overflow="ellipsis", no_wrap=True, max_width=max(16, con.width - 50))
        for c in ("dev", "count", "total", "mean", "%"):
            t.add_column(c, justify="right", no_wrap=True, min_width=len(c))
        for r in doc["top_kernels"]:
            t.add_row(
                Text(clean(short_name(r["name"]))),
                str(r["device"] if r["device"] is not None else "all"),
                f"{r['count']:,}",
                format_ns(r["total_ns"]),
                format_ns(r["mean_ns"]),
                f"{r['pct']:.1f}",
            )
        con.print(t)
    common.print_warnings(con, trace)
