"""The order of a trace's events: by lane, then start, then longest first (a parent before the children that start
with it), then file order; what ``np.lexsort((-dur, start, lane))`` gives, found faster."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64


def event_order(lane: npt.NDArray[np.integer], start: I64, dur: I64) -> I64:
    """Indices that sort the events by (lane, start, -dur), ties in file order: ``np.lexsort((-dur, start,
    lane))`` exactly (times in ns).

    Lane and start are packed into one int64 key when they fit (they do unless a trace spans more than about
    2**62 / lanes ns), which one stable sort orders; a file's events come in runs already sorted by start, which
    that sort (a merge sort that finds runs) takes nearly as they are, where lexsort sorts three keys one after
    another. Events with the same lane and start are then ordered by duration, each run of them on its own."""
    n = start.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(start.min()), int(start.max())
    lane_lo, lane_hi = int(lane.min()), int(lane.max())
    span = hi - lo + 1
    if (lane_hi - lane_lo + 1) * span >= 2**62:
        return np.lexsort((-dur, start, lane)).astype(np.int64, copy=False)
    key = lane.astype(np.int64)  # (lane - lane_lo) * span + (start - lo), in place: one array of n, not four
    key -= lane_lo
    key *= np.int64(span)
    key += start
    key -= np.int64(lo)
    order = np.argsort(key, kind="stable").astype(np.int64, copy=False)
    sorted_key = key[order]
    tie = sorted_key[1:] == sorted_key[:-1]
    if not tie.any():
        return order
    in_run = np.zeros(n, dtype=bool)
    in_run[1:] = tie
    in_run[:-1] |= tie
    at = np.flatnonzero(in_run)
    first = np.ones(at.shape[0], dtype=bool)  # where a run of equal keys starts
    first[1:] = ~tie[at[1:] - 1]
    run = np.cumsum(first)
    tied = order[at]  # in file order within each run (the sort is stable)
    order[at] = tied[np.lexsort((-dur[tied], run))]
    return order


__all__ = ["event_order"]
