"""Row assignment inside a lane: nested events get their depth, overlapping ones another row; none is dropped.

The optional compiled module ``_rows`` (``_rows.c``) does it in one pass per lane; the numpy path here is the
reference and the fallback (no C compiler at install, or ``GPUTOP_PURE_PYTHON=1``), and gives the same rows.
"""

from __future__ import annotations

import heapq
from types import ModuleType

import numpy as np

from gputop_trace.model.arrays import I16, I64
from gputop_trace.model.native import pure_python_forced

_rows: ModuleType | None
try:
    from gputop_trace.model import _rows  # type: ignore[attr-defined,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - built without a C compiler
    _rows = None

_TOO_MANY = "more than 32767 overlapping events in one lane"


def compiled() -> bool:
    """Whether rows are assigned by the compiled module (built, and not turned off by ``GPUTOP_PURE_PYTHON``:
    :mod:`~gputop_trace.model.native`)."""
    return _rows is not None and not pure_python_forced()


def assign_depths(start: I64, dur: I64, lane_offsets: I64) -> I16:
    """Row of every event inside its lane so that no row holds two overlapping events.

    Events must be sorted by (lane, start, -dur). Properly nested events get their nesting depth (a child is one
    row below its parent); a zero-length event occupies its instant. Vectorized per lane; lanes whose events
    overlap without nesting fall back to greedy first-free-row packing, which never drops an event.
    """
    if compiled():
        assert _rows is not None
        out = np.zeros(start.shape[0], dtype=np.int16)  # (events outside every lane stay in row 0, as below)
        as64 = np.ascontiguousarray
        if _rows.rows(as64(start, np.int64), as64(dur, np.int64), as64(lane_offsets, np.int64), out) < 0:
            raise OverflowError(_TOO_MANY)
        return out
    return numpy_depths(start, dur, lane_offsets)


def numpy_depths(start: I64, dur: I64, lane_offsets: I64) -> I16:
    """:func:`assign_depths` with numpy alone (the reference)."""
    n = start.shape[0]
    depth = np.zeros(n, dtype=np.int64)
    if n == 0:
        return depth.astype(np.int16)
    # doubled time so that a zero-length event occupies [2s, 2s+1)
    s2 = start * 2
    e2 = np.where(dur > 0, (start + dur) * 2, s2 + 1)
    for li in range(len(lane_offsets) - 1):
        a, b = int(lane_offsets[li]), int(lane_offsets[li + 1])
        if b - a <= 1:
            continue
        ls, le = s2[a:b], e2[a:b]
        # quick exit: nothing overlaps its predecessor's running maximum end → one row
        prev_max = np.maximum.accumulate(le)
        if not np.any(ls[1:] < prev_max[:-1]):
            continue
        # (ends come nearly sorted, nested events ending in order: the merge sort that finds runs takes them fastest)
        cand = np.arange(b - a, dtype=np.int64) - np.searchsorted(np.sort(le, kind="stable"), ls, side="right")
        if _rows_are_disjoint(ls, le, cand):
            depth[a:b] = cand
        else:
            depth[a:b] = _greedy_rows(ls, le)
    if depth.max(initial=0) > np.iinfo(np.int16).max:
        raise OverflowError(_TOO_MANY)
    return depth.astype(np.int16)


def _rows_are_disjoint(ls: I64, le: I64, rows: I64) -> bool:
    """Whether no two events of one row overlap (``ls`` sorted: a stable sort by row leaves each row in start
    order; rows below 2**16 are sorted by radix)."""
    if rows.min() < 0:
        return False
    order = np.argsort(rows.astype(np.uint16), kind="stable") if rows.max() < 2**16 else np.lexsort((ls, rows))
    r, s, e = rows[order], ls[order], le[order]
    same = r[1:] == r[:-1]
    return not bool(np.any(same & (s[1:] < e[:-1])))


def _greedy_rows(ls: I64, le: I64) -> I64:
    """First-free-row packing (events sorted by start): O(n log n), used only for non-nested overlaps."""
    rows = np.empty(ls.shape[0], dtype=np.int64)
    free: list[int] = []  # min-heap of free row numbers
    busy: list[tuple[int, int]] = []  # min-heap of (end, row)
    next_row = 0
    for i, (s, e) in enumerate(zip(ls.tolist(), le.tolist(), strict=True)):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            row = heapq.heappop(free)
        else:
            row, next_row = next_row, next_row + 1
        rows[i] = row
        heapq.heappush(busy, (e, row))
    return rows
