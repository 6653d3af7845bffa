"""Moving around a trace without scanning it: every instance of a name in time order, regex search over names,
launch ↔ GPU-op partners, the previous/next event of a row, and the ranges enclosing an event. numpy, no
Textual. The indexes are built once in a worker; each lookup is a binary search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import FlowKind, Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.tui.view.timeline_math import RowData


class NameIndex:
    """Every event grouped by name id and sorted by start: ``instances(name)`` is a slice, no scan."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        order = np.lexsort((trace.start_ns, trace.name))
        self.order: I64 = order.astype(np.int64)
        self.bounds: I64 = np.searchsorted(
            trace.name[order], np.arange(len(trace.names) + 1, dtype=np.int64), side="left"
        ).astype(np.int64)
        self._scoped: dict[tuple[int, int, int], tuple[I64, I64]] = {}

    def instances(self, name_id: int) -> I64:
        """Events named ``name_id``, sorted by start."""
        if not 0 <= name_id < len(self.bounds) - 1:
            return np.zeros(0, dtype=np.int64)
        return self.order[self.bounds[name_id] : self.bounds[name_id + 1]]

    def instances_like(self, event: int) -> tuple[I64, I64]:
        """Events with the same name as ``event`` on the same rank and, for GPU work, the same device, sorted
        by start, and their starts."""
        t = self.trace
        nid, rank, dev = int(t.name[event]), int(t.event_rank[event]), int(t.event_device[event])
        key = (nid, rank, dev)
        got = self._scoped.get(key)
        if got is None:
            inst = self.instances(nid)
            keep = (t.event_rank[inst] == rank) & (t.event_device[inst] == dev)
            ev = inst[keep]
            got = self._scoped[key] = (ev, t.start_ns[ev])
        return got

    def count(self, name_id: int) -> int:
        """How many events carry ``name_id``."""
        return int(self.bounds[name_id + 1] - self.bounds[name_id]) if 0 <= name_id < len(self.bounds) - 1 else 0


def compile_search(pattern: str) -> re.Pattern[str]:
    """A search regex with smart case (case-insensitive unless the pattern has a capital letter).

    Raises ``re.error`` with the reason when the pattern is not a valid regular expression.
    """
    flags = 0 if any(c.isupper() for c in pattern) else re.IGNORECASE
    return re.compile(pattern, flags)


def search_events(trace: Trace, index: NameIndex, pattern: re.Pattern[str]) -> I64:
    """Every event whose full name matches ``pattern`` (``re.search``), sorted by start time."""
    ids = [i for i, n in enumerate(trace.names) if pattern.search(n)]
    if not ids:
        return np.zeros(0, dtype=np.int64)
    parts = [index.instances(i) for i in ids]
    ev = np.concatenate(parts)
    out: I64 = ev[np.argsort(trace.start_ns[ev], kind="stable")]
    return out


def step_in_sorted(events: I64, starts: I64, current: int, t: int, direction: int) -> int:
    """The next (``direction`` > 0) or previous event of ``events`` (sorted by ``starts``): relative to the
    event ``current`` when it is among them (``t`` must then be its start), else relative to time ``t``.
    ``-1`` past either end."""
    n = len(events)
    if n == 0:
        return -1
    if current >= 0:
        lo = int(np.searchsorted(starts, t, side="left"))
        hi = int(np.searchsorted(starts, t, side="right"))
        hits = np.flatnonzero(events[lo:hi] == current)
        if len(hits):
            j = lo + int(hits[0]) + (1 if direction > 0 else -1)
            return int(events[j]) if 0 <= j < n else -1
    if direction > 0:
        j = int(np.searchsorted(starts, t, side="right"))
        return int(events[j]) if j < n else -1
    j = int(np.searchsorted(starts, t, side="left")) - 1
    return int(events[j]) if j >= 0 else -1


def step_in_row(row: RowData, current: int, t: int, direction: int) -> int:
    """The next/previous event of a row from event ``current`` (if it is in the row; ``t`` its start) or from
    time ``t``."""
    return step_in_sorted(row.events, row.starts, current, t, direction)


def position_in(events: I64, starts: I64, current: int, t: int) -> int:
    """Position of event ``current`` (starting at ``t``) in ``events`` sorted by ``starts``; ``-1`` if absent."""
    lo = int(np.searchsorted(starts, t, side="left"))
    hi = int(np.searchsorted(starts, t, side="right"))
    hits = np.flatnonzero(events[lo:hi] == current)
    return lo + int(hits[0]) if len(hits) else -1


class FlowIndex:
    """Launch call ↔ GPU op partners from the trace's launch flows."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        sel = trace.flows.kind == int(FlowKind.LAUNCH)
        src, dst = trace.flows.src[sel], trace.flows.dst[sel]
        order = np.argsort(src, kind="stable")
        self.src: I64 = src[order].astype(np.int64)
        self.dst: I64 = dst[order].astype(np.int64)

    def launched_by(self, api: int) -> I64:
        """GPU ops launched by the CPU call ``api``, by start time."""
        a = int(np.searchsorted(self.src, api, side="left"))
        b = int(np.searchsorted(self.src, api, side="right"))
        ops = self.dst[a:b]
        out: I64 = ops[np.argsort(self.trace.start_ns[ops], kind="stable")]
        return out

    def partners(self, event: int) -> I64:
        """The other end(s) of ``event``'s launch flow: its launch call, or the GPU ops it launched."""
        launch = int(self.trace.launch_of[event])
        if launch >= 0:
            return np.array([launch], dtype=np.int64)
        return self.launched_by(event)


@dataclass(frozen=True)
class Enclosing:
    """The events around an event on one lane, outermost first."""

    lane: int
    events: tuple[int, ...]


def enclosing_on_lane(trace: Trace, rows: dict[tuple[int, int], RowData], lane: int, t: int, max_depth: int) -> I64:
    """Events on ``lane`` in rows ``0 .. max_depth-1`` that contain time ``t`` (outermost first)."""
    out: list[int] = []
    for d in range(max_depth):
        row = rows.get((lane, d))
        if row is None or not len(row):
            continue
        j = int(np.searchsorted(row.starts, t, side="right")) - 1
        if j >= 0 and row.vis_ends[j] > t:
            out.append(int(row.events[j]))
    return np.array(out, dtype=np.int64)


def enclosing_ranges(trace: Trace, rows: dict[tuple[int, int], RowData], event: int) -> list[Enclosing]:
    """The ranges and operators around an event, outermost first: for a GPU op, those around its launch call
    on the launching thread, then the GPU annotation bands of its device; for a CPU event, those above it on
    its own thread."""
    out: list[Enclosing] = []
    kind = int(trace.kind[event])
    lane = int(trace.lane[event])
    if trace.lanes[lane].kind in (LaneKind.CPU_THREAD, LaneKind.ASYNC):
        ev = enclosing_on_lane(trace, rows, lane, int(trace.start_ns[event]), int(trace.depth[event]))
        if len(ev):
            out.append(Enclosing(lane, tuple(int(x) for x in ev)))
        return out
    launch = int(trace.launch_of[event])
    if launch >= 0:
        ll = int(trace.lane[launch])
        ev = enclosing_on_lane(trace, rows, ll, int(trace.start_ns[launch]), int(trace.depth[launch]))
        if len(ev):
            out.append(Enclosing(ll, tuple(int(x) for x in ev)))
    if kind != int(Kind.GPU_RANGE):
        ln = trace.lanes[lane]
        for other, o in enumerate(trace.lanes):
            if o.kind == LaneKind.GPU_RANGES and o.rank == ln.rank and o.device == ln.device:
                ev = enclosing_on_lane(trace, rows, other, int(trace.start_ns[event]), int(trace.lane_rows[other]))
                if len(ev):
                    out.append(Enclosing(other, tuple(int(x) for x in ev)))
    return out


@dataclass(frozen=True)
class RangeName:
    """One annotation name for the palette: its id, how many ranges carry it, the first one, GPU or CPU."""

    name_id: int
    count: int
    first: int
    on_gpu: bool


def range_names(trace: Trace, index: NameIndex) -> list[RangeName]:
    """Every distinct annotation-range name (CPU ranges and GPU annotations), most frequent first."""
    r = trace.of_kind(Kind.RANGE, Kind.GPU_RANGE)
    if not len(r):
        return []
    ids, pos = np.unique(trace.name[r], return_index=True)
    out = []
    for nid, p in zip(ids.tolist(), pos.tolist(), strict=True):
        inst = index.instances(int(nid))
        out.append(RangeName(int(nid), len(inst), int(inst[0]), int(trace.kind[r[p]]) == int(Kind.GPU_RANGE)))
    out.sort(key=lambda x: (-x.count, trace.names[x.name_id]))
    return out
