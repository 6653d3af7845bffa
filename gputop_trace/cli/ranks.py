"""``gputop-trace ranks PATH``: the per-rank table of a multi-GPU trace and who makes the others wait."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common

if TYPE_CHECKING:
    from gputop_trace.analysis.ranks import RankRow
    from gputop_trace.analysis.stragglers import StragglerReport
    from gputop_trace.model.trace import Trace

COLUMNS = (
    "rank", "devices", "steps", "step_ns", "busy_ns", "idle_ns", "collectives", "collective_ns",
    "exposed_collective_ns", "hidden_collective_pct", "collective_wait_ns", "times_last", "late_median_ns",
)  # fmt: skip


def register(sub: Any) -> None:
    """Add the ``ranks`` parser."""
    p = sub.add_parser(
        "ranks",
        help="per-rank table of a multi-GPU trace: steps, busy time, collectives, waiting, stragglers",
        description="Per-rank table of a multi-GPU trace (a directory of per-rank traces, or an nsys export with "
        "several GPUs): step times, GPU busy time, collective time and how much of it computation hides, the time "
        "each rank waits inside collectives for the last rank to arrive, and the straggler if there is one.",
    )
    common.add_paths(p)
    common.add_output(p)
    p.set_defaults(func=run)


def row_json(r: RankRow) -> dict[str, Any]:
    """One rank as a JSON-contract object."""
    return {
        "rank": r.rank,
        "devices": list(r.devices),
        "steps": r.steps,
        "step_ns": list(r.step_ns),
        "busy_ns": r.busy_ns,
        "idle_ns": r.idle_ns,
        "collectives": r.collectives,
        "collective_ns": r.collective_ns,
        "exposed_collective_ns": r.exposed_collective_ns,
        "hidden_collective_pct": round(r.hidden_collective_pct, 3),
        "collective_wait_ns": r.collective_wait_ns,
        "times_last": r.times_last,
        "late_median_ns": r.late_median_ns,
        "by_op": {op: {"count": n, "total_ns": t, "bytes": b} for op, (n, t, b) in r.by_op.items()},
    }


def straggler_json(s: StragglerReport) -> dict[str, Any]:
    """The straggler verdict as a JSON-contract object."""
    return {
        "straggler": s.straggler,
        "share_last": round(s.straggler_share, 4),
        "instances": s.instances,
        "clock_offset_ns": {str(k): v for k, v in s.clock_offset_ns.items()},
        "host_activity": [{"activity": a, "others_wait_ns": ns} for a, ns in s.host_activity],
        "groups": [{"group": g.group, "ranks": list(g.ranks), "matched": len(g), "unmatched": g.unmatched}
                   for g in s.groups],
    }  # fmt: skip


def straggler_sentence(s: StragglerReport, rows: list[RankRow]) -> str | None:
    """The verdict in plain words, or None when no rank stands out."""
    from gputop_trace.units import format_ns

    if s.straggler is None:
        return None
    me = next(w for w in s.ranks if w.rank == s.straggler)
    waiting = sorted((w for w in s.ranks if w.rank != s.straggler), key=lambda w: -w.wait_ns)
    who = ", ".join(f"rank {w.rank} waits {format_ns(w.wait_ns)}" for w in waiting[:3] if w.wait_ns)
    text = (
        f"Rank {s.straggler} is the last to arrive at {me.times_last} of {me.instances} collectives "
        f"(late by {format_ns(me.late_median_ns)} median, {format_ns(me.late_max_ns)} at most); {who} in total "
        "inside collective kernels for it."
    )
    if s.host_activity:
        top, _ = s.host_activity[0]
        text += f" Meanwhile its host was in `{top}`: look there for work the other ranks do not do."
    return text


def build(trace: Trace, paths: list[str]) -> dict[str, Any]:
    """The ranks document."""
    from gputop_trace.analysis.ranks import rank_table
    from gputop_trace.analysis.stragglers import find_stragglers
    from gputop_trace.report.envelope import envelope

    strag = find_stragglers(trace)
    rows = rank_table(trace, strag)
    return envelope(
        "ranks",
        trace,
        paths,
        ranks=[row_json(r) for r in rows],
        stragglers=straggler_json(strag),
        verdict=straggler_sentence(strag, rows),
    )


def run(args: argparse.Namespace) -> int:
    """Load, tabulate, print."""
    trace = common.load(args)
    doc = build(trace, args.paths)
    if args.json:
        common.emit_json(doc)
        return 0
    if args.csv:
        import sys

        from gputop_trace.report.envelope import to_csv

        sys.stdout.write(to_csv(doc["ranks"], COLUMNS))
        return 0
    render(doc, trace)
    return 0


def render(doc: dict[str, Any], trace: Trace) -> None:
    """Rich table + verdict."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.units import format_ns

    con = common.stdout_console()
    t = Table(title="Ranks", title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    for c in ("rank", "steps", "step", "GPU busy", "collect.", "exposed", "hidden", "waiting", "last"):
        t.add_column(c, justify="right", no_wrap=True, min_width=len(c))
    for r in doc["ranks"]:
        mean_step = sum(r["step_ns"]) / len(r["step_ns"]) if r["step_ns"] else None
        t.add_row(
            str(r["rank"]),
            str(r["steps"]),
            format_ns(mean_step) if mean_step is not None else "-",
            format_ns(r["busy_ns"]),
            format_ns(r["collective_ns"]),
            format_ns(r["exposed_collective_ns"]),
            f"{r['hidden_collective_pct']:.0f}%",
            format_ns(r["collective_wait_ns"]),
            f"{r['times_last']}",
        )
    con.print(t)
    con.print(
        Text(
            "step: mean step time; collect.: time in collective kernels; exposed: the part with no computation "
            "beside it; waiting: time inside collectives waiting for a later rank; last: times it arrived last.",
            style="dim",
        )
    )
    if doc["verdict"]:
        con.print(Text(doc["verdict"]))
    elif len(doc["ranks"]) > 1 and not any(r["collectives"] for r in doc["ranks"]):
        con.print(Text("No collective kernels in this trace: the ranks do not communicate through NCCL/RCCL here."))
    elif len(doc["ranks"]) > 1:
        con.print(Text("No rank stands out: collectives start within noise of each other on every rank."))
    else:
        con.print(Text("One rank only: open a directory of per-rank traces to compare ranks."))
    common.print_warnings(con, trace)
