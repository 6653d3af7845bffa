"""``gputop-trace ranks PATH``: the per-rank table of a multi-GPU trace and who makes the others wait."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common

if TYPE_CHECKING:
    from gputop_trace.model.trace import Trace


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


def run(args: argparse.Namespace) -> int:
    """Load, tabulate, print."""
    trace = common.load(args)
    from gputop_trace.report import ranks as ranks_report

    doc = ranks_report.ranks_document(trace, args.paths)
    if args.json:
        common.emit_json(doc)
        return 0
    if args.csv:
        import sys

        from gputop_trace.report.envelope import to_csv

        sys.stdout.write(to_csv(doc["ranks"], ranks_report.COLUMNS))
        return 0
    render(doc, trace)
    return 0


def render(doc: dict[str, Any], trace: Trace) -> None:
    """Rich table + verdict."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    con = common.stdout_console()
    if "job" in doc["source"]:
        con.print(Text(doc["source"]["job"]["note"], style="bold yellow"))
    t = Table(title="Ranks", title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    words = trace.device_words()
    for c in ("rank", "steps", "step", f"{words.noun} busy", "collect.", "exposed", "hidden", "waiting", "last"):
        t.add_column(c, justify="right", no_wrap=True, min_width=len(c))
    for r in doc["ranks"]:
        mean_step = sum(r["step_ns"]) / len(r["step_ns"]) if r["step_ns"] else None
        coll = bool(r["collectives"])  # without collectives (or GPU work) there is no figure, not a zero: "–"
        t.add_row(
            str(r["rank"]),
            str(r["steps"]),
            format_ns(mean_step) if mean_step is not None else "–",
            format_ns(r["busy_ns"]) if r["devices"] else "–",
            format_ns(r["collective_ns"]) if coll else "–",
            format_ns(r["exposed_collective_ns"]) if coll else "–",
            f"{r['hidden_collective_pct']:.0f}%" if coll else "–",
            format_ns(r["collective_wait_ns"]) if coll else "–",
            f"{r['times_last']}" if coll else "–",
        )
    con.print(t)
    con.print(
        Text(
            "step: mean step time; collect.: time in collective kernels; exposed: the part with no computation "
            "beside it; waiting: time inside collectives waiting for a later rank; last: times it arrived last.",
            style="dim",
        )
    )
    for n in doc["step_notes"]:
        con.print(Text("note: ", style="yellow") + Text(clean(f"rank {n['rank']}: {n['note']}.")))
    if doc["verdict"]:
        con.print(Text(doc["verdict"]))
    elif len(doc["ranks"]) > 1 and not any(r["collectives"] for r in doc["ranks"]):
        lib = "NCCL/RCCL" if words.is_gpu else "a collective library"
        con.print(Text(f"No collective kernels in this trace: the ranks do not communicate through {lib} here."))
    elif len(doc["ranks"]) > 1:
        con.print(Text("No rank stands out: collectives start within noise of each other on every rank."))
    else:
        con.print(Text("One rank only: open a directory of per-rank traces to compare ranks."))
    common.print_warnings(con, trace)
