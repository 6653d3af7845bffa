"""Which event overlaps a time window most: evidence for "what was the thread doing during this gap"."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from gputop_trace.model import Trace

I64 = npt.NDArray[np.int64]


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
    lane = trace.lane[ev].astype(np.int64)
    depth = trace.depth[ev].astype(np.int64)
    order = np.lexsort((trace.start_ns[ev], depth, lane))
    ev, lane, depth = ev[order], lane[order], depth[order]
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
        owner = np.repeat(np.arange(len(qi), dtype=np.int64), n)
        first = np.repeat(np.cumsum(n) - n, n)
        pos = lo[owner] + (np.arange(total, dtype=np.int64) - first)
        ov = np.minimum(re_[pos], e_q[qi][owner]) - np.maximum(rs[pos], s_q[qi][owner])
        # best per query in this row: sort by (query, -overlap, position)
        o = np.lexsort((pos, -ov, owner))
        owner_s, ov_s, pos_s = owner[o], ov[o], pos[o]
        lead = np.concatenate(([True], owner_s[1:] != owner_s[:-1]))
        w_owner, w_ov, w_pos = owner_s[lead], ov_s[lead], pos_s[lead]
        target = qi[w_owner]
        better = w_ov > best_ns[target]
        best[target[better]] = row[w_pos[better]]
        best_ns[target[better]] = w_ov[better]
    return best, best_ns
