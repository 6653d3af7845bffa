"""Why the GPU idled during each gap: the cause, its evidence and what the host thread did (detectors.md §2).

The rules are those of :mod:`gputop_trace.analysis.gaps.detect` (its module text): a gap whose next op was already
queued is a GPU-side dependency; otherwise the launching thread's activity from the gap start to the end of the
launch call is split by :mod:`gputop_trace.analysis.host.classes` classes and the class holding most of it names
the cause.
All times are int64 ns relative to the trace start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.analysis.gaps.causes import CAUSES
from gputop_trace.analysis.host.classes import HostClass, host_classes
from gputop_trace.analysis.intervals import overlap_with_union, union
from gputop_trace.analysis.launches import VERY_SLOW_LAUNCH_NS
from gputop_trace.analysis.overlap import largest_overlap, outermost_only
from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace

#: Breakdown keys of the examined window (ns per class).
BREAKDOWN_KEYS: tuple[str, ...] = ("sync", "os", "data", "cpu", "untraced")
#: A sync call that ended at most this long before the gap began still counts as "in a sync at the gap start"
#: (timestamps of host and device come from different clocks and are rounded).
SYNC_TOLERANCE_NS = 5_000

_CAUSE_CODE = {c: i for i, c in enumerate(CAUSES)}


@dataclass(frozen=True)
class GapColumns:
    """The reported gaps of one device as columns (same meaning as the
    :class:`~gputop_trace.analysis.gaps.detect.Gap` fields), start order."""

    start_ns: I64
    dur_ns: I64
    cause: npt.NDArray[np.int8]
    launch_event: I64
    next_op: I64
    prev_op: I64
    thread_lane: I64
    cause_event: I64
    after_sync: I64
    range_event: I64
    window_ns: I64
    breakdown_ns: I64  # (n, len(BREAKDOWN_KEYS))

    def __len__(self) -> int:
        return int(self.start_ns.shape[0])

    def take(self, sel: Any) -> GapColumns:
        """A subset of the rows."""
        return GapColumns(**{k: getattr(self, k)[sel] for k in self.__dataclass_fields__})


def attribute_gaps(trace: Trace, g0: I64, g1: I64, nxt: I64, prev: I64, fallback: I64) -> GapColumns:
    """Cause, evidence and breakdown of each gap ``[g0, g1)`` closed by GPU op ``nxt``."""
    n = len(g0)
    launch = trace.launch_of[nxt] if n else np.zeros(0, dtype=np.int64)
    known = launch >= 0
    safe = np.maximum(launch, 0)
    l_end = np.where(known, trace.start_ns[safe] + trace.dur_ns[safe], 0)
    thread = np.where(known, trace.lane[safe].astype(np.int64), fallback)
    gpu_dep = known & (l_end <= g0)
    # window examined on the host: gap start → end of the launch call (or the whole gap when unknown)
    w_end = np.where(known, np.clip(l_end, g0, g1), g1)
    w_end = np.where(gpu_dep, g0, w_end)
    window = w_end - g0
    breakdown = np.zeros((n, len(BREAKDOWN_KEYS)), dtype=np.int64)
    breakdown[:, -1] = window
    cause_event = np.full(n, -1, dtype=np.int64)
    after_sync = np.full(n, -1, dtype=np.int64)
    range_event = np.full(n, -1, dtype=np.int64)
    cause = np.full(n, _CAUSE_CODE["untraced"], dtype=np.int8)
    has_thread = thread >= 0
    if n and has_thread.any():
        range_event[has_thread] = innermost_enclosing(trace, thread[has_thread], g0[has_thread], (Kind.RANGE,))
    host_rows = np.flatnonzero(has_thread & ~gpu_dep)
    for lane in distinct(thread[host_rows]).tolist():
        rows = host_rows[thread[host_rows] == lane]
        sl = trace.lane_slice(lane)
        base = sl.start
        cls = host_classes(trace, sl)
        l_start = trace.start_ns[sl]
        l_end = l_start + trace.dur_ns[sl]
        ws, we = g0[rows], w_end[rows]
        _host_breakdown(breakdown, rows, cls, l_start, l_end, ws, we)
        _sync_left(trace, after_sync, rows, cls, l_start, l_end, base, g0)
        code, drained = _dominant_cause(breakdown[rows], after_sync[rows], we - ws)
        cause[rows] = code
        _cause_evidence(trace, cause_event, rows, code, cls, l_end, base, thread, g0, w_end)
        stall = rows[drained]
        cause_event[stall] = after_sync[stall]
    cause[gpu_dep] = _CAUSE_CODE["gpu_dependency"]
    slow = _slow_launches(trace, cause, launch, nxt, g0, window)
    cause[slow] = _CAUSE_CODE["slow_launch"]
    cause_event[slow] = launch[slow]  # the evidence is the call the host sat in
    return GapColumns(
        start_ns=g0.astype(np.int64),
        dur_ns=(g1 - g0).astype(np.int64),
        cause=cause,
        launch_event=launch.astype(np.int64),
        next_op=nxt.astype(np.int64),
        prev_op=prev.astype(np.int64),
        thread_lane=thread.astype(np.int64),
        cause_event=cause_event,
        after_sync=after_sync,
        range_event=range_event,
        window_ns=window.astype(np.int64),
        breakdown_ns=breakdown,
    )


def _host_breakdown(breakdown: I64, rows: I64, cls: np.ndarray, l_start: I64, l_end: I64, ws: I64, we: I64) -> None:
    """Fill the ``rows`` of ``breakdown`` with the time (ns) of each host class in the windows ``[ws, we)`` of one
    thread (its events' classes ``cls`` and times), by cumulative unions: sync; sync+os; sync+os+data (small sets,
    merged step by step); all host work; the rest of the window is untraced."""
    us = ue = np.zeros(0, dtype=np.int64)
    covered_prev = np.zeros(len(rows), dtype=np.int64)
    for c in HostClass:
        if c == HostClass.CPU:
            work = cls >= 0  # a subset of the lane: still sorted by start, union needs no sort
            us, ue = union(l_start[work], l_end[work])
        else:
            m = cls == c
            us, ue = union(np.concatenate((us, l_start[m])), np.concatenate((ue, l_end[m])))
        covered = overlap_with_union(ws, we, us, ue)
        breakdown[rows, int(c)] = covered - covered_prev
        covered_prev = covered
    breakdown[rows, -1] = (we - ws) - covered_prev


def _sync_left(
    trace: Trace, after_sync: I64, rows: I64, cls: np.ndarray, l_start: I64, l_end: I64, base: int, g0: I64
) -> None:
    """Set ``after_sync`` of the ``rows`` whose thread was still in (or just leaving) a sync call when the GPU went
    idle (at ``g0``): the sync call that ends last among those started by then (the one the thread waited in)."""
    sync_pos = np.flatnonzero(cls == HostClass.SYNC)
    if not len(sync_pos):
        return
    sync_ev = sync_pos + base
    ss = l_start[sync_pos]
    se = np.maximum.accumulate(l_end[sync_pos])
    k = np.searchsorted(ss, g0[rows], side="right") - 1
    hit = (k >= 0) & (se[np.maximum(k, 0)] >= g0[rows] - SYNC_TOLERANCE_NS)
    cand = np.where(hit, k, -1)
    after_sync[rows[hit]] = _latest_ending(trace, sync_ev, cand[hit])


def _dominant_cause(breakdown: I64, after_sync: I64, window: I64) -> tuple[npt.NDArray[np.int8], np.ndarray]:
    """Each gap's cause from its host breakdown: the dominant class (ties: the earlier class in priority order),
    a sync stall where CPU work followed a sync the thread left (those gaps, ``drained``, are returned too), and
    untraced for an empty window."""
    dom = np.argmax(breakdown, axis=1)
    code = np.array(
        [_CAUSE_CODE[c] for c in ("sync_stall", "blocked_os", "data_loading", "cpu_bound", "untraced")],
        dtype=np.int8,
    )[dom]
    drained = (after_sync >= 0) & (code == _CAUSE_CODE["cpu_bound"])
    code[drained] = _CAUSE_CODE["sync_stall"]
    code[window == 0] = _CAUSE_CODE["untraced"]
    return code, drained


def _cause_evidence(
    trace: Trace,
    cause_event: I64,
    rows: I64,
    code: npt.NDArray[np.int8],
    cls: np.ndarray,
    l_end: I64,
    base: int,
    thread: I64,
    g0: I64,
    w_end: I64,
) -> None:
    """Set ``cause_event`` of the ``rows`` (causes ``code``) to the event of the winning class overlapping the
    window most."""
    for c, cname in (
        (HostClass.SYNC, "sync_stall"),
        (HostClass.OS, "blocked_os"),
        (HostClass.DATA, "data_loading"),
        (HostClass.CPU, "cpu_bound"),
    ):
        want = rows[(code == _CAUSE_CODE[cname])]
        if not len(want):
            continue
        cand = outermost_only(l_end, np.flatnonzero(cls == c)) + base
        best, _ = largest_overlap(trace, thread[want], g0[want], w_end[want], cand)
        cause_event[want] = best


#: A gap the host spent in traced work is a slow launch when the launch call of the kernel that ends it covers at
#: least this share of the examined window (gap start → end of that launch call).
SLOW_LAUNCH_SHARE = 0.5


def _slow_launches(trace: Trace, cause: npt.NDArray[np.int8], launch: I64, nxt: I64, g0: I64, window: I64) -> I64:
    """The gaps whose examined window is mostly one launch call (``cudaLaunchKernel``, ``hipLaunchKernel`` ...) of
    the kernel that ends the gap: the host sat inside one slow call (lazy module loading, a driver stall), not in
    framework overhead. Only gaps the host spent in traced work qualify (a launch call is traced work), and only
    calls of at least :data:`~gputop_trace.analysis.launches.VERY_SLOW_LAUNCH_NS`, the launch detector's own bar
    (ordinary launches of 10–200 µs in a CPU-bound stretch stay CPU-bound)."""
    cand = np.flatnonzero((cause == _CAUSE_CODE["cpu_bound"]) & (launch >= 0) & (window > 0))
    if not len(cand):
        return cand
    api = launch[cand]
    w0, w1 = g0[cand], g0[cand] + window[cand]
    a0 = trace.start_ns[api]
    a1 = a0 + trace.dur_ns[api]
    inside = np.maximum(np.minimum(a1, w1) - np.maximum(a0, w0), 0)
    kernel = (trace.kind[nxt[cand]] == Kind.KERNEL) & (trace.dur_ns[api] >= VERY_SLOW_LAUNCH_NS)
    slow: I64 = cand[kernel & (inside >= SLOW_LAUNCH_SHARE * window[cand])]
    return slow


def _latest_ending(trace: Trace, events: I64, upto: I64) -> I64:
    """For each position ``upto[i]`` into ``events`` (sorted by start), the event among ``events[:upto+1]``
    that ends last."""
    ends = trace.start_ns[events] + trace.dur_ns[events]
    # running argmax of ends
    run_max = np.maximum.accumulate(ends)
    is_new = np.concatenate(([True], ends[1:] >= run_max[:-1]))
    arg = np.maximum.accumulate(np.where(is_new, np.arange(len(ends)), 0))
    return events[arg[upto]]
