"""``gputop-trace summary PATH [--json]``: what the profile holds and where GPU time went."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.cli.fail_on import add_fail_on, failed_conditions
from gputop_trace.model.kinds import JSON_KEY_WORDS
from gputop_trace.units import plural

if TYPE_CHECKING:
    from rich.console import Console

    from gputop_trace.model.trace import Trace


def register(sub: Any) -> None:
    """Add the ``summary`` parser."""
    p = sub.add_parser(
        "summary",
        help="print the findings, GPU busy time and top kernels (text or --json)",
        description="Print what the profile holds and where GPU time went: findings first, then GPU busy time, "
        "top kernels and warnings. With no PATH, summarises the bundled sample trace.",
    )
    common.add_paths(p, optional=True)
    common.add_inductor_dir(p)
    common.add_output(p, csv=False)
    p.add_argument(
        "--gap-threshold",
        type=common.duration_arg,
        default=None,
        metavar="TIME",
        help="shortest GPU idle gap the findings count (units: ns, us, ms, s; default 20us)",
    )
    add_fail_on(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, summarise, print."""
    if not args.paths:
        from gputop_trace.load.samples import default_sample

        args.paths = [default_sample()]
    trace = common.load(args)
    from gputop_trace.report.summary import analyse, summary_document

    a = analyse(trace, args.gap_threshold)
    doc = summary_document(trace, args.paths, a)
    if args.json:
        common.emit_json(doc)
    else:
        render(doc, trace)
    if args.fail_on is not None:
        failed = failed_conditions(args.fail_on, a.findings, a.gaps, a.transfers)
        if failed:
            import sys

            for line in failed:
                print(f"gputop-trace: --fail-on: {line}", file=sys.stderr)
            return 1
    return 0


def render(doc: dict[str, Any], trace: Trace) -> None:
    """Print the summary with Rich tables."""
    from rich.text import Text

    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    con = common.stdout_console()
    src = doc["source"]
    con.print(Text("gputop-trace summary  ", style="bold") + Text(clean(str(src["path"]))))
    con.print(Text(f"format: {src['format']} — ") + Text(clean(src["producer"])))
    if "job" in src:
        con.print(Text(src["job"]["note"], style="bold yellow"))
    render_findings(con, doc["findings"])
    noun = trace.device_words().noun
    con.print(Text(f"{noun}s: {devices_text(doc, trace)}"))
    con.print(Text(f"ranks: {', '.join(str(r) for r in src['ranks'])}   span: {format_ns(doc['span_ns'])}"))
    if doc.get("span_note"):
        con.print(Text("note: ", style="yellow") + Text(clean(f"{doc['span_note']}.")))
    render_steps(con, doc)
    said = trace.device_words()
    ev = ", ".join(plural(v, *said.kind_words(JSON_KEY_WORDS.get(k, (k, k)))) for k, v in doc["events"].items() if v)
    con.print(Text(f"events: {sum(doc['events'].values()):,} ({ev})"))
    render_busy(con, doc, noun)
    render_host(con, doc)
    render_top_kernels(con, doc)
    render_gaps(con, doc, trace)
    render_transfers(con, doc, trace)
    render_ranges(con, doc, noun)
    render_memory(con, doc, trace)
    common.print_warnings(con, trace)


def devices_text(doc: dict[str, Any], trace: Trace) -> str:
    """The devices that were busy (all of them when none was), each with its model and SM (CU) count, and how many
    more are listed without activity."""
    from gputop_trace.safe_text import clean

    active = {(d["rank"], d["device"]) for d in doc["devices"]}
    shown = [g for g in doc["gpus"] if (g["rank"], g["device"]) in active] or doc["gpus"]
    multi = len(doc["source"]["ranks"]) > 1
    gpus = ", ".join(
        (f"rank {g['rank']} " if multi else "")
        + f"{trace.device_label(g['rank'], g['device'])}: {clean(g['name'])}"
        + (
            f" ({g['sm_count']} {'CUs' if trace.device_words(g['rank'], g['device']).runtime == 'HIP' else 'SMs'})"
            if g["sm_count"]
            else ""
        )
        for g in shown
    )
    idle_listed = len(doc["gpus"]) - len(shown)
    more = f"; {idle_listed} more listed without activity" if active and idle_listed > 0 else ""
    if not gpus and active:  # busy devices, but the trace names none of them (no deviceProperties)
        gpus = ", ".join((f"rank {r} " if multi else "") + trace.device_label(r, d) for r, d in sorted(active))
        more = " (model not recorded: the trace has no deviceProperties)"
    return f"{gpus or 'none recorded'}{more}"


def render_steps(con: Console, doc: dict[str, Any]) -> None:
    """Each rank's mean step time (with its min and max over several steps) and the steps' notes."""
    from rich.text import Text

    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    multi = len(doc["source"]["ranks"]) > 1
    for s in doc["steps"]:
        who = f"rank {s['rank']} " if multi else ""
        spread = f" (min {format_ns(s['min_ns'])}, max {format_ns(s['max_ns'])})" if s["count"] > 1 else ""
        con.print(Text(f"{who}step time: {format_ns(s['mean_ns'])} mean over {plural(s['count'], 'step')}{spread}"))
        if s["note"]:
            con.print(Text("note: ", style="yellow") + Text(clean(f"{who}{s['note']}.")))


def render_busy(con: Console, doc: dict[str, Any], noun: str) -> None:
    """Each device's busy and idle time, busy % and active span; or why there is none."""
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.units import format_ns

    if doc["devices"]:
        t = Table(title=f"{noun} busy time", title_justify="left")
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
    elif doc.get("range_profiler"):
        con.print(
            Text(f"No {noun} busy time: a CUPTI range-profiler trace (finding 1 says what it holds).", style="yellow")
        )
    else:
        con.print(Text("No GPU activity in this profile.", style="yellow"))


def render_top_kernels(con: Console, doc: dict[str, Any]) -> None:
    """The top kernels by total time, their names cut to the console's width so that names that differ read
    differently."""
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.analysis.kernels import short_name
    from gputop_trace.presentation.name_fitting import fit_names
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    if not doc["top_kernels"]:
        return
    t = Table(title=f"Top {plural(len(doc['top_kernels']), 'kernel')} by total time", title_justify="left")
    t.add_column("kernel", overflow="ellipsis", no_wrap=True, max_width=max(16, con.width - 50))
    for c in ("dev", "count", "total", "mean", "%"):
        t.add_column(c, justify="right", no_wrap=True, min_width=len(c))
    names = fit_names([clean(short_name(r["name"])) for r in doc["top_kernels"]], max(16, con.width - 50))
    for r, name in zip(doc["top_kernels"], names, strict=True):  # names that differ read differently
        t.add_row(
            Text(name),
            str(r["device"] if r["device"] is not None else "all"),
            f"{r['count']:,}",
            format_ns(r["total_ns"]),
            format_ns(r["mean_ns"]),
            f"{r['pct']:.1f}",
        )
    con.print(t)


def _units_of(trace: Trace, g: dict[str, Any]) -> str:
    """What a GPU's ``sm_count`` counts: compute units on ROCm, streaming multiprocessors elsewhere."""
    return "CUs" if trace.device_words(g["rank"], g["device"]).runtime == "HIP" else "SMs"


def render_memory(con: Console, doc: dict[str, Any], trace: Trace) -> None:
    """One line per device with allocator records (profile_memory): the peak and the operator it happened in."""
    from rich.text import Text

    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_bytes, format_ns

    for m in doc.get("memory") or []:
        where = "host" if m["device"] < 0 else trace.device_label(int(m.get("rank", 0)), int(m["device"]))
        op = f" in {clean(m['peak_op'])}" if m["peak_op"] else ""
        con.print(
            Text(
                f"memory peak, {where}: {format_bytes(m['peak_allocated_bytes'])} allocated at "
                f"{format_ns(m['peak_ns'])}{op}"
            )
        )


def render_findings(con: Console, findings: list[dict[str, Any]]) -> None:
    """The findings, most important first: a numbered title and a wrapped detail paragraph each."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.safe_text import clean

    if not findings:
        con.print(Text("\nFindings: nothing stands out (no idle gap, copy or sync pattern above the thresholds).\n"))
        return
    con.print(Text("\nWhat to fix first", style="bold underline"))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(ratio=1)
    for f in findings:
        grid.add_row(
            Text(f"{f['priority']}.", style="bold"),
            Group(Text(clean(f["title"]), style="bold"), Text(clean(f["detail"]))),
        )
    con.print(grid)
    con.print()


def render_gaps(con: Console, doc: dict[str, Any], trace: Trace) -> None:
    """Per-device idle time by cause, one line each, and the longest gaps."""
    from rich.text import Text

    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    gaps = doc.get("gaps") or []
    if not gaps:
        return
    con.print(Text(f"Idle gaps ≥ {format_ns(doc['gap_threshold_ns'])}", style="bold"))
    for d in gaps:
        causes = sorted((c for c in d["by_cause"].values() if c["count"]), key=lambda c: -c["total_ns"])
        parts = ", ".join(f"{c['label']} {format_ns(c['total_ns'])} ({c['count']})" for c in causes)
        con.print(
            Text(
                f"  rank {d['rank']} {trace.device_label(d['rank'], d['device'])}: idle {format_ns(d['idle_ns'])} "
                f"({d['idle_pct']:.1f}%), {plural(d['gap_count'], 'gap')} = {format_ns(d['gaps_ns'])}"
                + (f": {parts}" if parts else "")
                + ("; launch-bound" if d["launch_bound"] else "")
            )
        )
        for g in d["longest"][:3]:
            con.print(Text(f"    {format_ns(g['dur_ns'])} {g['cause_label']}: ") + Text(clean(g["detail"])))


def render_transfers(con: Console, doc: dict[str, Any], trace: Trace) -> None:
    """Exposed copy time per device and the copy flags."""
    from rich.text import Text

    from gputop_trace.units import format_ns

    tr = doc.get("transfers") or {}
    if not tr.get("devices"):
        return
    per = ", ".join(
        f"rank {d['rank']} {trace.device_label(d['rank'], d['device'])} {format_ns(d['exposed_ns'])} of "
        f"{format_ns(d['copy_ns'])}"
        for d in tr["devices"]
    )
    con.print(Text("Exposed copy time (not under any kernel): ", style="bold") + Text(per))
    for f in tr["flags"]:
        con.print(
            Text(f"  {f['title']}: {plural(f['count'], 'copy', 'copies')}, ")
            + Text(f"{format_ns(f['exposed_ns'])} exposed")
        )


def render_host(con: Console, doc: dict[str, Any]) -> None:
    """Where the host time went (a profile with no GPU activity): the top operators by self CPU time."""
    from rich.text import Text

    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    host = doc.get("host")
    if not host or not host["top_ops"]:
        return
    rows = host["top_ops"]
    shown = f"top {len(rows)} of {host['operators']}" if host["operators"] > len(rows) else f"all {len(rows)}"
    t = compact_table(f"Host time by operator ({shown} by self CPU; % of {format_ns(host['self_cpu_total_ns'])})")
    t.add_column("operator", overflow="ellipsis", no_wrap=True, max_width=max(12, con.width - 48))
    add_number_columns(t, "calls", "self CPU", "CPU total", "%")
    for r in rows:
        t.add_row(
            Text(clean(r["name"])),
            f"{r['count']:,}",
            format_ns(r["self_cpu_ns"]),
            format_ns(r["cpu_total_ns"]),
            f"{r['pct']:.1f}",
        )
    con.print(t)


def render_ranges(con: Console, doc: dict[str, Any], noun: str = "GPU") -> None:
    """The top annotation ranges with the time of the device work they launched (``noun``: ``GPU``, ``MTIA``)."""
    from rich.text import Text

    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    rows = doc.get("top_ranges") or []
    if not rows:
        return
    gpu = bool(doc.get("devices")) or doc.get("host") is None  # no device columns for a profile without any
    t = compact_table(f"Top {plural(len(rows), 'range')} by CPU time")
    t.add_column("range", overflow="ellipsis", no_wrap=True, max_width=max(8, con.width - (50 if gpu else 20)))
    add_number_columns(t, "n", width=3)
    add_number_columns(t, "CPU", *((noun, f"{noun} span") if gpu else ()))
    for r in rows:
        device = (format_ns(r["gpu_ns"]), format_ns(r["gpu_span_ns"])) if gpu else ()
        t.add_row(Text(clean(r["name"])), f"{r['count']:,}", format_ns(r["total_ns"]), *device)
    con.print(t)
