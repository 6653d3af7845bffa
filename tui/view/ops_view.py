"""What panel 8 (Ops) shows, without Textual: the operator rows (as ``gputop-trace ops``: operators and
annotations, figures of ``key_averages()``), each operator's rows by input shape, and the text of the shape
breakdown beside the table. Times in ns."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from gputop_trace.analysis.operators.table import OPERATOR_KINDS, OpRow, op_table
from gputop_trace.analysis.operators.tree import build_op_tree
from gputop_trace.model.trace import Trace
from gputop_trace.safe_text import clean
from gputop_trace.units import format_ns, format_si

#: the panel's sort keys, in the order ``o`` cycles them
SORTS: tuple[str, ...] = ("self CPU", "CPU", "self dev", "device", "calls", "FLOPs", "name")


@dataclass(frozen=True)
class OpsView:
    """Operator rows (by name) and, per operator name, its rows by input shape (most device time first)."""

    rows: list[OpRow]
    shapes: dict[str, list[OpRow]] = field(default_factory=dict)
    has_device: bool = False
    has_shapes: bool = False


def ops_view(trace: Trace) -> OpsView:
    """The panel's rows from one operator tree (grouped twice: by name, and by name and shape)."""
    tree = build_op_tree(trace)
    rows = [r for r in op_table(trace, tree=tree) if r.kind in OPERATOR_KINDS]
    shapes: dict[str, list[OpRow]] = {}
    for r in op_table(trace, group_by="shape", tree=tree):
        if r.kind in OPERATOR_KINDS:
            shapes.setdefault(r.name, []).append(r)
    for lst in shapes.values():
        lst.sort(key=lambda r: (-r.device_total_ns, -r.cpu_total_ns))
    return OpsView(
        rows=rows,
        shapes=shapes,
        has_device=any(r.device_total_ns for r in rows),
        has_shapes=any(r.shapes not in (None, "[]") for lst in shapes.values() for r in lst),
    )


def sort_key(name: str) -> object:
    """The value a row is sorted on for the sort ``name`` (descending, except names)."""
    getters = {
        "self CPU": lambda r: r.self_cpu_ns,
        "CPU": lambda r: r.cpu_total_ns,
        "self dev": lambda r: r.self_device_ns,
        "device": lambda r: r.device_total_ns,
        "calls": lambda r: r.count,
        "FLOPs": lambda r: r.flops or 0,
        "name": lambda r: r.name.lower(),
    }
    return getters[name]


def shape_breakdown(view: OpsView, row: OpRow | None, width: int, height: int) -> Text:
    """The highlighted operator's calls by input shape: calls, CPU and device time, FLOPs (estimated), shapes."""
    if row is None:
        return Text("")
    text = Text(clean(row.name) + "\n", style="bold", no_wrap=True, overflow="ellipsis")
    groups = view.shapes.get(row.name, [])
    if not view.has_shapes:
        text.append("no input shapes: record with record_shapes=True", style="dim")
        return text
    text.append(f"{len(groups)} input shape{'s' if len(groups) != 1 else ''}\n", style="dim")
    room = max(1, height - 2)
    for g in groups[: room // 2]:
        figures = f"{g.count:>5,}× CPU {format_ns(g.cpu_total_ns)}"
        if view.has_device:
            figures += f"  dev {format_ns(g.device_total_ns)}"
        if g.flops:
            figures += f"  {format_si(g.flops, 'FLOP')}"
        text.append(figures[:width] + "\n")
        shape = clean(g.shapes or "[]")
        text.append(("  " + shape)[:width] + "\n", style="cyan")
    if len(groups) > room // 2:
        text.append(f"… {len(groups) - room // 2} more", style="dim")
    return text
