"""Everything the timeline needs from a trace, prepared once in a worker thread so that drawing a frame only
looks things up: one :class:`RowData` per lane row, the busy union of every GPU, the family of every kernel
name, and (when the analyses are done) the idle gaps to mark. No Textual.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.busy import DeviceBusy, device_busy
from gputop_trace.analysis.compiled.inductor import InductorLookup
from gputop_trace.analysis.compiled.regions import CompiledProgram, compiled_program
from gputop_trace.model.arrays import I64, U8, distinct_ids
from gputop_trace.model.kinds import COPY_KIND_LABEL, Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.presentation.kernel_labels import Family, kernel_family, kernel_label
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.lanes import LaneLayout
from gputop_trace.tui.view.memory_lane import MemoryRow, memory_rows
from gputop_trace.tui.view.palette import event_sids
from gputop_trace.tui.view.timeline_math import RowData
from gputop_trace.units import format_bytes

#: PyTorch ``emit_nvtx`` appends per-call ids to every operator range; labels leave them out.
_OP_SUFFIX = re.compile(r", (?:seq|op_id|sizes|input_op_ids|stream|fwd_seq) = .*$")


@dataclass(frozen=True)
class GapMarks:
    """Idle gaps of one GPU to mark on its utilization strip: a row of intervals plus one label per gap."""

    row: RowData
    labels: tuple[str, ...]


@dataclass
class TimelineData:
    """Prepared lookups for drawing and navigating a trace. Times in ns from the trace start."""

    trace: Trace
    layout: LaneLayout
    rows: dict[tuple[int, int], RowData]
    util: dict[tuple[int, int], RowData]
    busy: list[DeviceBusy]
    name_family: U8
    gaps: dict[tuple[int, int], GapMarks] = field(default_factory=dict)
    memory: dict[tuple[int, int], MemoryRow] = field(default_factory=dict)
    _labels: dict[int, str] = field(default_factory=dict, repr=False)
    _program: list[CompiledProgram] = field(default_factory=list, repr=False)
    _inductor: list[InductorLookup] = field(default_factory=list, repr=False)

    def inductor(self) -> InductorLookup:
        """What the trace knows about its torch.compile kernels, by name (built once, on first use)."""
        if not self._inductor:
            self._inductor.append(InductorLookup(self.trace))
        return self._inductor[0]

    def program(self) -> CompiledProgram:
        """The trace's torch.compile / CUDA-graph facts (computed once, on first use)."""
        if not self._program:
            self._program.append(compiled_program(self.trace))
        return self._program[0]

    @property
    def extent(self) -> tuple[int, int]:
        """The time range the view may show: from 0 to the end of the last event (at least 1 ns)."""
        return 0, max(int(self.trace.span_ns), 1)

    def row(self, lane: int, depth: int) -> RowData:
        """The events of one lane row."""
        return self.rows.get((lane, depth)) or RowData.empty()

    def util_row(self, rank: int, device: int) -> RowData:
        """The busy union of one GPU, as a row of intervals."""
        return self.util.get((rank, device)) or RowData.empty()

    def device_busy_of(self, rank: int, device: int) -> DeviceBusy | None:
        """The busy summary of one GPU."""
        for d in self.busy:
            if d.rank == rank and d.device == device:
                return d
        return None

    # styles and labels -------------------------------------------------------------------------------------
    def sids(self, events: I64) -> U8:
        """Style ids (see :class:`~gputop_trace.tui.view.palette.Sid`) of events; ``events`` must be ``>= 0``."""
        t = self.trace
        kind = t.kind[events]
        copy_dir = None
        if len(t.copies) and bool(np.any(kind == int(Kind.MEMCPY))):
            pos = np.searchsorted(t.copies.event, events)
            pos = np.minimum(pos, len(t.copies) - 1)
            ok = t.copies.event[pos] == events
            copy_dir = np.where(ok, t.copies.direction[pos], 0).astype(np.uint8)
        return event_sids(kind, t.name[events], self.name_family, copy_dir)

    def label(self, i: int) -> str:
        """A short label for event ``i`` as drawn in its box: the kernel's short label, a copy's direction and
        size, or the (cleaned) name."""
        t = self.trace
        kind = int(t.kind[i])
        if kind in (Kind.MEMCPY, Kind.MEMSET):
            row = t.copy_row(i)
            if row >= 0:
                size = format_bytes(int(t.copies.bytes[row]))
                what = "memset" if kind == Kind.MEMSET else COPY_KIND_LABEL.get(int(t.copies.direction[row]), "copy")
                return f"{what} {size}"
        nid = int(t.name[i])
        lab = self._labels.get(nid)
        if lab is None:
            name = t.names[nid]
            if kind == Kind.KERNEL:
                lab = kernel_label(name)
            elif kind == Kind.CPU_OP and name.startswith("aten::"):
                lab = name[6:]  # the operator; the details pane shows the full name
            elif kind == Kind.RANGE:
                lab = _OP_SUFFIX.sub("", name)  # emit_nvtx's per-call ", seq = 12, op_id = 345" suffix
            else:
                lab = name
            lab = clean(lab)
            self._labels[nid] = lab
        return lab

    def family_of(self, i: int) -> Family:
        """The kernel family of event ``i`` (:attr:`Family.OTHER` for non-kernels)."""
        if int(self.trace.kind[i]) != Kind.KERNEL:
            return Family.OTHER
        return Family(int(self.name_family[int(self.trace.name[i])]))

    def set_gaps(self, gaps: dict[tuple[int, int], GapMarks]) -> None:
        """Install the idle gaps found by the gap detector."""
        self.gaps = gaps


def lane_rows(trace: Trace, lane: int) -> dict[int, RowData]:
    """The rows of one lane. A single-row lane uses views of the trace's columns (no copy)."""
    sl = trace.lane_slice(lane)
    n_rows = int(trace.lane_rows[lane])
    out: dict[int, RowData] = {}
    if sl.stop <= sl.start:
        return out
    if n_rows == 1:
        idx = np.arange(sl.start, sl.stop, dtype=np.int64)
        out[0] = RowData.from_intervals(idx, trace.start_ns[sl], trace.end_ns[sl])
        return out
    depth = trace.depth[sl]
    order = np.argsort(depth, kind="stable")  # keeps start order inside each depth
    counts = np.bincount(depth.astype(np.int64), minlength=n_rows)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    for d in range(n_rows):
        idx = order[bounds[d] : bounds[d + 1]].astype(np.int64) + sl.start
        if len(idx):
            out[d] = RowData.from_intervals(idx, trace.start_ns[idx], trace.end_ns[idx])
    return out


def kernel_name_families(trace: Trace) -> U8:
    """The :class:`Family` of every name id that names a kernel (``OTHER`` for the rest)."""
    fam = np.zeros(len(trace.names), dtype=np.uint8)
    k = trace.of_kind(Kind.KERNEL)
    for nid in distinct_ids(trace.name[k]).tolist():
        fam[nid] = int(kernel_family(trace.names[nid]))
    return fam


def prepare_timeline(trace: Trace, *, step: Callable[[str], None] | None = None) -> TimelineData:
    """Build every lookup the timeline needs (O(n log n) once; run it off the UI thread).

    ``step(what)`` is called before each stage, for a progress line.
    """
    if step:
        step("arranging lanes")
    layout = LaneLayout(trace)
    if step:
        step("indexing rows")
    rows: dict[tuple[int, int], RowData] = {}
    for lane in range(len(trace.lanes)):
        for d, r in lane_rows(trace, lane).items():
            rows[(lane, d)] = r
    if step:
        step("GPU busy time")
    busy = device_busy(trace)
    util = {
        (b.rank, b.device): RowData.from_intervals(
            np.full(len(b.busy_starts), -1, np.int64), b.busy_starts, b.busy_ends
        )
        for b in busy
    }
    # GPU lanes with work but no busy-kind events (UVM only) still get an (empty) strip
    for ln in trace.lanes:
        if ln.kind == LaneKind.GPU_STREAM and ln.device >= 0:
            util.setdefault((ln.rank, ln.device), RowData.empty())
    if step:
        step("kernel families")
    fam = kernel_name_families(trace)
    memory = memory_rows(trace) if len(trace.memory) else {}
    return TimelineData(trace=trace, layout=layout, rows=rows, util=util, busy=busy, name_family=fam, memory=memory)
