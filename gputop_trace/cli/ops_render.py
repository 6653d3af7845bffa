"""Rich rendering of ``gputop-trace ops``: the operator table, the steps' MFU and the memory peaks."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common

if TYPE_CHECKING:
    from gputop_trace.analysis.operators.table import OpRow
    from gputop_trace.analysis.operators.tree import OpTree
    from gputop_trace.model.trace import Trace


def _bytes(n: int) -> str:
    from gputop_trace.units import format_bytes

    return ("-" + format_bytes(-n)) if n < 0 else format_bytes(n)


def render(trace: Trace, tree: OpTree, rows: list[OpRow], args: argparse.Namespace, gpu: str) -> None:
    """Print the operator table (``args.top`` rows), then the steps' MFU and the memory peaks when known."""
    from rich.text import Text

    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.report.ops_json import NSYS_NO_FLOPS_LINE, flops_unavailable
    from gputop_trace.safe_text import clean

    con = common.stdout_console()
    if not rows:
        what = "operators matching that name" if args.name else "framework operators (torch.profiler cpu_op events)"
        con.print(Text(f"No {what} in this profile.", style="yellow"))
        common.print_warnings(con, trace)
        return
    shown = rows[: args.top if args.top > 0 else len(rows)]
    cols = _columns(rows)
    label = {"shape": "input shapes", "stack": "python frame"}.get(args.group_by)
    # drop the least needed columns until the name has room (each number column: its width + 2 between)
    budget = con.width - 1 - (28 if label else 0)
    while len(cols) > 4 and budget - sum(w + 3 for _, w, _ in cols) < 24:
        cols.pop(_drop_index(cols))
    room = max(12, budget - sum(w + 3 for _, w, _ in cols))
    t = compact_table(f"Operators ({len(shown)} of {len(rows):,}, by {args.sort.replace('_', ' ')})")
    t.add_column("operator", overflow="ellipsis", no_wrap=True, max_width=room)
    if label:
        t.add_column(label, overflow="ellipsis", no_wrap=True, max_width=26)
    for head, width, _ in cols:
        add_number_columns(t, head, width=width)
    for r in shown:
        cells: list[Any] = [Text(clean(r.name))]
        if args.group_by == "shape":
            cells.append(Text(clean(r.shapes or "")))
        elif args.group_by == "stack":
            cells.append(Text(clean(r.stack[0] if r.stack else "")))
        cells += [cell(r, gpu) for _, _, cell in cols]
        t.add_row(*cells)
    con.print(t)
    has_mem = any(h in ("CPU mem", "dev mem") for h, _, _ in cols)
    has_flops = any(h == "FLOPs" for h, _, _ in cols)
    notes = ["self = without the time of the operators it called; device = kernels, copies and memsets it launched"]
    if has_mem:
        notes.append("mem = self memory allocated (negative: freed)")
    if has_flops:
        notes.append(
            "FLOPs are estimates from the input shapes (GEMMs exact), rate = FLOPs per second of device time "
            + trace.device_words(args.rank).say("(% of the GPU's published peak)")
        )
    con.print(Text("; ".join(notes) + ".", style="dim"))
    if flops_unavailable(trace):  # one line; the JSON's flops_unavailable says more
        con.print(Text(NSYS_NO_FLOPS_LINE, style="dim"))
    _steps_and_memory(con, trace, tree, args)
    common.print_warnings(con, trace)


Cell = Callable[["OpRow", str], str]
#: columns dropped first when the terminal is narrow
_DROP_FIRST = ("CPU avg", "dev avg", "CPU", "rate", "dev mem", "CPU mem", "FLOPs")


def _drop_index(cols: list[tuple[str, int, Cell]]) -> int:
    heads = [c[0] for c in cols]
    for h in _DROP_FIRST:
        if h in heads:
            return heads.index(h)
    return len(cols) - 1


def _rate(r: OpRow, gpu: str) -> str:
    from gputop_trace.analysis.operators.mfu import achieved
    from gputop_trace.units import format_si

    a = achieved(r, gpu)
    if a.flop_per_s and r.work_kind in ("gemm", "attention", "conv"):
        text = format_si(a.flop_per_s, "FLOP/s")
    elif a.bytes_per_s:
        text = format_si(a.bytes_per_s, "B/s")
    else:
        return "-"
    return text + (f" {a.peak_pct:.0f}%" if a.peak_pct is not None else "")


def _columns(rows: list[OpRow]) -> list[tuple[str, int, Cell]]:
    """(header, width, cell) of the number columns the rows have figures for."""
    from gputop_trace.units import format_ns, format_si

    cols: list[tuple[str, int, Cell]] = [
        ("calls", 6, lambda r, g: f"{r.count:,}"),
        ("self CPU", 9, lambda r, g: format_ns(r.self_cpu_ns)),
        ("CPU", 9, lambda r, g: format_ns(r.cpu_total_ns)),
        ("CPU avg", 9, lambda r, g: format_ns(r.cpu_mean_ns)),
    ]
    if any(r.device_total_ns for r in rows):
        cols += [
            ("self dev", 9, lambda r, g: format_ns(r.self_device_ns)),
            ("device", 9, lambda r, g: format_ns(r.device_total_ns)),
            ("dev avg", 9, lambda r, g: format_ns(r.device_mean_ns)),
        ]
    if any(r.cpu_mem or r.self_cpu_mem for r in rows):
        cols.append(("CPU mem", 9, lambda r, g: _bytes(r.self_cpu_mem)))
    if any(r.device_mem or r.self_device_mem for r in rows):
        cols.append(("dev mem", 9, lambda r, g: _bytes(r.self_device_mem)))
    if any(r.flops for r in rows):
        cols.append(("FLOPs", 10, lambda r, g: format_si(r.flops, "FLOP") if r.flops else "-"))
    if any(r.device_total_ns and (r.flops or r.bytes_moved) for r in rows):
        cols.append(("rate", 16, _rate))
    return cols


def _steps_and_memory(con: Any, trace: Trace, tree: OpTree, args: argparse.Namespace) -> None:
    from rich.text import Text

    from gputop_trace.analysis.operators.memory import memory_series
    from gputop_trace.analysis.operators.mfu import step_mfu
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns, format_range, format_si

    steps = [s for s in step_mfu(trace, tree) if args.rank is None or s.rank == args.rank]
    if steps:
        mfus = [s.mfu_pct for s in steps if s.mfu_pct is not None]
        flops = sum(s.flops for s in steps) / len(steps)
        line = f"Steps: {len(steps)}, mean {format_si(flops, 'FLOP')} estimated per step"
        if mfus:
            mfu = format_range(f"{min(mfus):.1f}", f"{max(mfus):.1f}", unit="%")
            line += f", model FLOPs utilisation {mfu} ({steps[0].precision} peak)"
        con.print(Text(line + "."))
    for m in memory_series(trace):
        if args.rank is not None and m.rank != args.rank:
            continue
        where = f" in {clean(m.peak_op)}" if m.peak_op else ""
        frame = f" ({clean(m.peak_stack[0])})" if m.peak_stack else ""
        con.print(
            Text(
                f"Memory peak, {m.label}: {_bytes(m.peak_bytes)} allocated at {format_ns(m.peak_ns)}{where}{frame}"
                + (f"; {_bytes(m.reserved_peak_bytes)} reserved at most" if m.reserved_peak_bytes > 0 else "")
                + "."
            )
        )
