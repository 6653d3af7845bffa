"""The order of a trace's events: by lane, then start, then longest first (a parent before the children that start
with it), then file order; what ``np.lexsort((-dur, start, lane))`` gives, found faster."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64

if TYPE_CHECKING:  # (concurrent.futures, and the logging it brings, only where a build takes workers)
    from concurrent.futures import Executor

#: events from which :func:`event_order` sorts lane groups on the pool it is given, one group per thread
PARALLEL_SORT_EVENTS = 1 << 21


def event_order(
    lane: npt.NDArray[np.integer], start: I64, dur: I64, *, pool: Executor | None = None, threads: int = 1
) -> I64:
    """Indices that sort the events by (lane, start, -dur), ties in file order: ``np.lexsort((-dur, start,
    lane))`` exactly (times in ns).

    Lane and start are packed into one int64 key when they fit (they do unless a trace spans more than about
    2**62 / lanes ns), which one stable sort orders; a file's events come in runs already sorted by start, which
    that sort (a merge sort that finds runs) takes nearly as they are, where lexsort sorts three keys one after
    another. Events with the same lane and start are then ordered by duration, each run of them on its own.

    Given a ``pool`` and ``threads`` > 1 (the calling thread counted), a trace of :data:`PARALLEL_SORT_EVENTS`
    events or more is sorted in groups of whole lanes, one group on each thread (:func:`_argsort_by_lane_groups`):
    the same order."""
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
    if pool is not None and threads > 1 and n >= PARALLEL_SORT_EVENTS:
        order = _argsort_by_lane_groups(key, lane, lane_lo, lane_hi, pool, threads)
    else:
        order = np.argsort(key, kind="stable").astype(np.int64, copy=False)
    sorted_key = key[order]
    del key
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


def _argsort_by_lane_groups(
    key: I64, lane: npt.NDArray[np.integer], lane_lo: int, lane_hi: int, pool: Executor, threads: int
) -> I64:
    """``np.argsort(key, kind="stable")`` of :func:`event_order`'s keys, sorted on ``threads`` threads (numpy
    releases the GIL while it sorts). Every key of a lane lies below every key of the next lane, so the lanes are
    cut into ``threads`` runs of consecutive lanes holding about as many events each; the events are put in order
    of their run (a stable sort of one byte per event, in file order within each run), each run's keys are sorted
    on its own thread, and the runs' orders laid end to end are the order of the whole."""
    n = key.shape[0]
    counts = np.bincount(lane - lane_lo, minlength=lane_hi - lane_lo + 1)
    ends = np.cumsum(counts)
    # the run of each lane: lanes whose events end before the k-th n/threads go to run k (at most 255 runs)
    runs = min(threads, 255)
    cuts = np.arange(1, runs, dtype=np.int64) * n // runs
    run_of_lane = np.searchsorted(cuts, ends - counts, side="right").astype(np.uint8)
    run = run_of_lane[lane - lane_lo]
    by_run = np.argsort(run, kind="stable").astype(np.int64, copy=False)  # one byte: a radix sort
    del run
    sizes = np.bincount(run_of_lane, weights=counts, minlength=runs).astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    order = np.empty(n, dtype=np.int64)

    def sort_run(k: int) -> None:
        a, b = int(bounds[k]), int(bounds[k + 1])
        if a == b:
            return
        rows = by_run[a:b]
        within = np.argsort(key[rows], kind="stable")
        np.take(rows, within, out=order[a:b])

    pending = [pool.submit(sort_run, k) for k in range(1, runs)]
    sort_run(0)
    for f in pending:
        f.result()
    return order


__all__ = ["event_order"]
