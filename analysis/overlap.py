"""Which event overlaps a time window most: evidence for "what was the thread doing during this gap"."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.trace import Trace


def largest_overlap(
    trace: Trace, q_lane: npt.ArrayLike, ws: npt.ArrayLike, we: npt.ArrayLike, events: npt.ArrayLike
) -> tuple[I64, I64]:
    """For each query window ``[ws, we)`` (ns) on lane ``q_lane``: the event among ``events`` on that lane that
    overlaps the window longest, and that overlap (ns). ``-1`` / 0 where none overlaps.

    Vectorized per (lane, row): events of one timeline row never overlap, so in each row the candidates for a
    window are one contiguous run found with two binary searches; the work is proportional to the number of
    (window, overlapping event) pairs. Ties go to the earlier (outer) event.
    """
    ql = np.asarray(q_lane, dtype=np.int64)
    s_q = np.asarray(ws, dtype=np.int64)
    e_q = np.asarray(we, dtype=np.int64)
    ev = np.asarray(events, dtype=np.int64)
    best = np.full(ql.shape, -1, dtype=np.int64)
    best_ns = np.zeros(ql.shape, dtype=np.int64)
    if not len(ev) or not len(ql):
        return best, best_ns
    if len(ev) > 1 and not bool(np.all(ev[1:] > ev[:-1])):
        ev = distinct(ev)
    # events in index order are sorted by (lane, start); a stable sort on the small depth column (radix sort)
    # within each lane groups them by row and keeps each row in start order
    lane = trace.lane[ev].astype(np.int64)
    lane_cut = np.concatenate(([0], np.flatnonzero(lane[1:] != lane[:-1]) + 1, [len(ev)]))
    parts = []
    for a, b in zip(lane_cut[:-1].tolist(), lane_cut[1:].tolist(), strict=True):
        parts.append(a + np.argsort(trace.depth[ev[a:b]], kind="stable"))
    order = np.concatenate(parts)
    ev, lane = ev[order], lane[order]
    depth = trace.depth[ev].astype(np.int64)
    cut = np.flatnonzero((lane[1:] != lane[:-1]) | (depth[1:] != depth[:-1])) + 1
    seg_start = np.concatenate(([0], cut))
    seg_end = np.concatenate((cut, [len(ev)]))
    q_order = np.argsort(ql, kind="stable")
    q_sorted = ql[q_order]
    for a, b in zip(seg_start.tolist(), seg_end.tolist(), strict=True):
        ln = int(lane[a])
        qa, qb = np.searchsorted(q_sorted, [ln, ln + 1])
        if qa == qb:
            continue
        qi = q_order[qa:qb]
        row = ev[a:b]
        rs = trace.start_ns[row]
        re_ = rs + trace.dur_ns[row]
        lo = np.searchsorted(re_, s_q[qi], side="right")  # first event ending after the window starts
        hi = np.searchsorted(rs, e_q[qi], side="left")  # events starting before the window ends
        n = np.maximum(hi - lo, 0)
        total = int(n.sum())
        if total == 0:
            continue
        has = np.flatnonzero(n > 0)
        owner = np.repeat(has, n[has])  # pairs come grouped by query, each query's run in start order
        first = np.repeat(np.cumsum(n[has]) - n[has], n[has])
        pos = lo[owner] + (np.arange(total, dtype=np.int64) - first)
        ov = np.minimum(re_[pos], e_q[qi][owner]) - np.maximum(rs[pos], s_q[qi][owner])
        # best per query in this row: the largest overlap, the earliest event on ties
        run_start = np.cumsum(n[has]) - n[has]
        best_ov = np.maximum.reduceat(ov, run_start)
        hit = np.flatnonzero(ov == np.repeat(best_ov, n[has]))
        lead = np.concatenate(([True], owner[hit][1:] != owner[hit][:-1]))
        w_owner, w_ov, w_pos = owner[hit][lead], ov[hit][lead], pos[hit][lead]
        target = qi[w_owner]
        better = w_ov > best_ns[target]
        best[target[better]] = row[w_pos[better]]
        best_ns[target[better]] = w_ov[better]
    return best, best_ns


def outermost_only(ends: I64, pos: I64) -> I64:
    """The positions (in one lane, in trace order) whose event is not contained in an earlier one of the set
    (``ends``: the lane's event ends). An event inside another never overlaps a window more than its container
    does, so these are the only candidates for "the event that overlaps the window longest" (the outer one
    also wins ties)."""
    if len(pos) < 2:
        return pos
    e = ends[pos]
    keep = np.concatenate(([True], e[1:] > np.maximum.accumulate(e)[:-1]))
    return pos[keep]
