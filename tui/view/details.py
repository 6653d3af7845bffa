"""The details of one event as label/value pairs (and as Rich text for the details pane): full name, where it
ran, when, how long, launch geometry or copy size and bandwidth, the call that launched it and the ranges around
it. No Textual; every name from the trace goes through ``safe_text.clean`` into ``Text``, never markup.
"""

from __future__ import annotations

import math

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from gputop_trace.model.devices import PROFILER_LANE
from gputop_trace.model.kinds import COPY_KIND_LABEL, KIND_WORDS, MEM_KIND_LABEL, Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.presentation.figure_wrap import FigureText
from gputop_trace.presentation.kernel_labels import FAMILY_LABEL, kernel_display_name
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.compiled_details import inductor_rows, replay_rows
from gputop_trace.tui.view.navigation import FlowIndex, NameIndex, enclosing_ranges, position_in
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.units import format_bytes, format_ns, format_rate, plural

#: Each kind in words (singular), as the details pane names what is selected.
KIND_LABEL: dict[int, str] = {k: words[0] for k, words in KIND_WORDS.items()}


def lane_description(trace: Trace, lane: int) -> str:
    """Where a lane's events ran: ``rank 0 · GPU 0 · stream 7`` or ``rank 0 · pid 453 · thread 485 (python3)``."""
    ln = trace.lanes[lane]
    parts = []
    if len(trace.meta.ranks) > 1 or ln.rank:
        parts.append(f"rank {ln.rank}")
    if ln.kind in (LaneKind.GPU_STREAM, LaneKind.GPU_RANGES, LaneKind.UVM):
        parts.append(trace.device_label(ln.rank, ln.device))
        ranges = PROFILER_LANE if ln.name == PROFILER_LANE else "annotations"
        parts.append(ranges if ln.kind == LaneKind.GPU_RANGES else clean(ln.name))
    else:
        if ln.pid >= 0:
            parts.append(f"pid {ln.pid}")
        parts.append(clean(ln.name))
    return " · ".join(parts)


def range_gpu_text(trace: Trace, event: int) -> str:
    """What a range instance launched on the GPU, and how it was counted: ``1.18 ms busy from 96 GPU ops
    launched inside it; 95 by its thread's autograd thread (Kineto fwdbwd flows)``."""
    from gputop_trace.analysis.ranges import instance_gpu

    g = instance_gpu(trace, event)
    if not g.gpu_ops:
        return "none launched inside it"
    text = f"{format_ns(g.gpu_ns)} busy from {plural(g.gpu_ops, 'GPU op')} launched inside it"
    if g.gpu_ops_autograd:
        text += f"; {g.gpu_ops_autograd:,} by its thread's autograd thread ({g.via})"
    return text


def _tuple(v: np.ndarray) -> str:  # type: ignore[type-arg]
    return "(" + ", ".join(str(int(x)) for x in v) + ")"


def describe_event(
    data: TimelineData,
    event: int,
    *,
    names: NameIndex | None = None,
    flows: FlowIndex | None = None,
) -> tuple[str, list[tuple[str, str]]]:
    """``(title, [(label, value), ...])`` for the details pane: the title is the event's name (a kernel's short
    name; its full name is one of the rows). Values are cleaned plain strings."""
    t = data.trace
    i = int(event)
    kind = int(t.kind[i])
    start, dur = int(t.start_ns[i]), int(t.dur_ns[i])
    name = clean(t.event_name(i))
    rows: list[tuple[str, str]] = []
    tail: list[tuple[str, str]] = []
    what = KIND_LABEL.get(kind, "event")
    if kind == Kind.KERNEL:
        what += f" ({FAMILY_LABEL[data.family_of(i)]})"
    elif kind == Kind.GPU_RANGE and t.lanes[int(t.lane[i])].kind == LaneKind.GPU_STREAM:
        what = "CUDA-graph replay band (its kernels run one row below)"
    rows.append(("what", f"{what} on {lane_description(t, int(t.lane[i]))}"))
    title = name
    if kind == Kind.KERNEL:
        title = clean(kernel_display_name(t.event_name(i)))
        if title != name:
            tail.append(("full name", name))
    rows.append(
        ("when", f"{format_ns(start, precision=6)} for {format_ns(dur)} (ends {format_ns(start + dur, precision=6)})")
    )
    launch = int(t.launch_of[i])
    if launch >= 0:
        ls = int(t.start_ns[launch])
        rows.append(
            (
                "launched by",
                f"{clean(t.event_name(launch))} at {format_ns(ls, precision=6)} on "
                f"{lane_description(t, int(t.lane[launch]))}; started {format_ns(start - ls)} after the call (x)",
            )
        )
    elif flows is not None:
        ops = flows.launched_by(i)
        if len(ops):
            first = int(ops[0])
            more = f" (+{len(ops) - 1} more)" if len(ops) > 1 else ""
            rows.append(
                (
                    "launches",
                    f"{data.label(first)} on {lane_description(t, int(t.lane[first]))}, "
                    f"{format_ns(int(t.start_ns[first]) - start)} later{more} (x)",
                )
            )
    if kind == Kind.RANGE and t.lanes[int(t.lane[i])].kind == LaneKind.CPU_THREAD:
        rows.append(("GPU work", range_gpu_text(t, i)))
    for enc in enclosing_ranges(t, data.rows, i):
        chain = " › ".join(clean(t.event_name(e)) for e in enc.events)
        lk = t.lanes[enc.lane].kind
        rows.append(("GPU ranges" if lk == LaneKind.GPU_RANGES else "inside", chain))
    if kind == Kind.KERNEL:
        rows.extend(_kernel_rows(t, i, tail))
    if kind == Kind.KERNEL:
        rows.extend(inductor_rows(data.inductor().info(t.event_name(i))))
    rows.extend(replay_rows(data, i))
    if kind in (Kind.MEMCPY, Kind.MEMSET, Kind.UVM):
        rows.extend(_copy_rows(t, i, kind, dur))
    if names is not None:
        inst, starts = names.instances_like(i)
        if len(inst) > 1:
            pos = position_in(inst, starts, i, start)
            scope = "this GPU" if int(t.event_device[i]) >= 0 else "this rank"
            rows.append(("instance", f"{pos + 1} of {len(inst):,} with this name on {scope} (n / N)"))
    ids = []
    if int(t.corr[i]) >= 0:
        ids.append(f"correlation {int(t.corr[i])}")
    if int(t.ext[i]) >= 0:
        ids.append(f"external id {int(t.ext[i])}")
    ids.append(f"file time {t.file_time_ns(start, int(t.event_rank[i])):,} ns")
    rows.append(("ids", " · ".join(ids)))
    rows.extend(tail)
    return title, rows


def _kernel_rows(t: Trace, i: int, tail: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A kernel's launch geometry, resources and occupancy rows (its raw name goes to ``tail``)."""
    rows: list[tuple[str, str]] = []
    k = t.kernel_row(i)
    if k >= 0:
        kt = t.kernels
        regs = int(kt.registers[k])
        sh_s, sh_d = int(kt.shared_static[k]), int(kt.shared_dynamic[k])
        rows.append(("grid", _tuple(kt.grid[k]) + " × block " + _tuple(kt.block[k])))
        rows.append(
            (
                "resources",
                f"{regs} registers/thread · shared {format_bytes(sh_s)} static + {format_bytes(sh_d)} dynamic",
            )
        )
        occ = float(kt.occupancy[k])
        extra = []
        if not math.isnan(occ):
            extra.append(f"est. achieved occupancy {occ:.0f}%")
        bps, wps = float(kt.blocks_per_sm[k]), float(kt.warps_per_sm[k])
        if not math.isnan(bps):
            extra.append(f"{bps:.1f} blocks/SM")
        if not math.isnan(wps):
            extra.append(f"{wps:.1f} warps/SM")
        if extra:
            rows.append(("occupancy", " · ".join(extra)))
        raw = int(kt.raw_name[k])
        if raw >= 0:
            tail.append(("raw name", clean(t.names[raw])))
    return rows


def _copy_rows(t: Trace, i: int, kind: int, dur: int) -> list[tuple[str, str]]:
    """A copy's, memset's or migration's size (and rate over ``dur`` ns), direction and memory rows."""
    rows: list[tuple[str, str]] = []
    c = t.copy_row(i)
    if c >= 0:
        ct = t.copies
        nbytes = int(ct.bytes[c])
        size = f"{format_bytes(nbytes)} ({nbytes:,} bytes)"
        if dur > 0 and nbytes > 0:
            size += f" at {format_rate(nbytes / (dur / 1e9))}"
        rows.append(("size", size))
        if kind == Kind.MEMCPY:
            direction = COPY_KIND_LABEL.get(int(ct.direction[c]), "unknown")
            src = MEM_KIND_LABEL.get(int(ct.src_kind[c]), "unknown")
            dst = MEM_KIND_LABEL.get(int(ct.dst_kind[c]), "unknown")
            rows.append(("direction", f"{direction}  {src} → {dst}"))
        else:
            rows.append(("memory", MEM_KIND_LABEL.get(int(ct.dst_kind[c]), "unknown")))
        asy = int(ct.is_async[c])
        if asy >= 0:
            rows.append(("async", "yes" if asy else "no (blocks the host)"))
    return rows


def details_text(title: str, rows: list[tuple[str, str]]) -> Group:
    """Rich renderable of a details block: the name in bold, then ``label  value`` rows whose values wrap
    under themselves (never under the labels)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", style="dim", no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for k, v in rows:
        grid.add_row(k, FigureText(v))  # a value wraps, but never between a figure and its unit
    return Group(Text(title, style="bold", overflow="fold"), grid)
