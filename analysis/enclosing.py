"""Which event encloses a time on a lane: "the innermost range on the launching thread", vectorized."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64, distinct_ids
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace


def nesting_parents(starts: I64, ends: I64) -> I64:
    """Parent (index into the same arrays, ``-1`` for roots) of properly nested intervals sorted by
    (start, -duration). Partially overlapping intervals get the nearest earlier interval one level up."""
    n = starts.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    s2 = starts * 2
    e2 = np.where(ends > starts, ends * 2, s2 + 1)
    depth = np.arange(n, dtype=np.int64) - np.searchsorted(np.sort(e2), s2, side="right")
    depth = np.maximum(depth, 0)
    parent = np.full(n, -1, dtype=np.int64)
    idx = np.arange(n, dtype=np.int64)
    for d in range(1, int(depth.max(initial=0)) + 1):
        child = idx[depth == d]
        up = idx[depth == d - 1]
        if not len(child) or not len(up):
            continue
        k = np.searchsorted(up, child, side="left") - 1
        ok = k >= 0
        parent[child[ok]] = up[k[ok]]
    return parent


def innermost_enclosing(trace: Trace, lanes: npt.ArrayLike, times: npt.ArrayLike, kinds: Iterable[Kind]) -> I64:
    """For each query (lane, time ns), the innermost event of one of ``kinds`` on that lane with
    ``start <= time < end``; ``-1`` where none encloses it. Queries with lane ``-1`` get ``-1``."""
    q_lane = np.asarray(lanes, dtype=np.int64)
    q_t = np.asarray(times, dtype=np.int64)
    out = np.full(q_lane.shape, -1, dtype=np.int64)
    wanted = np.zeros(256, dtype=bool)  # by kind code (uint8)
    wanted[[int(k) for k in kinds]] = True
    for lane in distinct_ids(q_lane[q_lane >= 0]).tolist():
        sl = trace.lane_slice(lane)
        cand = np.flatnonzero(wanted[trace.kind[sl]]) + sl.start
        if not len(cand):
            continue
        s = trace.start_ns[cand]
        e = s + trace.dur_ns[cand]
        parent = nesting_parents(s, e)
        qi = np.flatnonzero(q_lane == lane)
        t = q_t[qi]
        cur = np.searchsorted(s, t, side="right") - 1
        result = np.full(len(qi), -1, dtype=np.int64)
        active = cur >= 0
        while active.any():
            c = cur[active]
            hit = e[c] > t[active]
            ai = np.flatnonzero(active)
            result[ai[hit]] = c[hit]
            nxt = parent[c[~hit]]
            cur[ai[~hit]] = nxt
            active[ai[hit]] = False
            active[ai[~hit][nxt < 0]] = False
        ok = result >= 0
        out[qi[ok]] = cand[result[ok]]
    return out
