"""Vectorized interval arithmetic on int64 nanosecond intervals ``[start, end)``."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64, distinct


def union(starts: npt.ArrayLike, ends: npt.ArrayLike) -> tuple[I64, I64]:
    """Merge intervals into a sorted list of disjoint intervals (touching intervals are merged).

    Zero-length intervals contribute nothing.
    """
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    if not bool(keep.all()):
        s, e = s[keep], e[keep]
    if s.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if s.size > 1 and not bool(np.all(s[1:] >= s[:-1])):  # events of one lane arrive sorted: skip the sort
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    # a new merged interval starts where the start is beyond every earlier end
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    out_s = s[idx]
    out_e = run_end[np.concatenate((idx[1:] - 1, [s.size - 1]))]
    return out_s, out_e


def total(starts: I64, ends: I64) -> int:
    """Total length of disjoint intervals (ns)."""
    return int((ends - starts).sum())


def _covered_before(us: I64, ue: I64, cum: I64, t: I64) -> I64:
    """Length of the union ``(us, ue)`` lying before each time ``t`` (vectorized)."""
    k = np.searchsorted(us, t, side="right")  # intervals starting at or before t
    before = np.where(k > 0, cum[np.maximum(k - 1, 0)], 0)
    last = np.maximum(k - 1, 0)
    # the k-th interval (index k-1) may extend past t: remove the part after t
    over = np.where(k > 0, np.maximum(ue[last] - t, 0), 0)
    return before - over


def overlap_with_union(starts: npt.ArrayLike, ends: npt.ArrayLike, us: I64, ue: I64) -> I64:
    """For each interval ``[starts[i], ends[i])``, how much of it the disjoint sorted union ``(us, ue)`` covers."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if us.size == 0 or s.size == 0:
        return np.zeros(s.shape, dtype=np.int64)
    cum = np.cumsum(ue - us)
    out: I64 = np.maximum(_covered_before(us, ue, cum, e) - _covered_before(us, ue, cum, s), 0)
    return out


def subtract(as_: I64, ae: I64, bs: I64, be: I64) -> tuple[I64, I64]:
    """The parts of disjoint sorted intervals A not covered by disjoint sorted intervals B."""
    if as_.size == 0 or bs.size == 0:
        return as_.copy(), ae.copy()
    # boundaries: A starts/ends and B starts/ends; walk the elementary segments between them
    pts = distinct(np.concatenate((as_, ae, bs, be)))
    mid_s, mid_e = pts[:-1], pts[1:]
    in_a = _inside(as_, ae, mid_s)
    in_b = _inside(bs, be, mid_s)
    keep = in_a & ~in_b
    return union(mid_s[keep], mid_e[keep])


def _inside(us: I64, ue: I64, t: I64) -> npt.NDArray[np.bool_]:
    """Whether each time ``t`` lies inside one of the disjoint sorted intervals ``[us, ue)``."""
    k = np.searchsorted(us, t, side="right") - 1
    ok = k >= 0
    res = np.zeros(t.shape, dtype=bool)
    res[ok] = t[ok] < ue[k[ok]]
    return res


def gaps(us: I64, ue: I64) -> tuple[I64, I64]:
    """The holes between consecutive disjoint sorted intervals (no leading or trailing hole)."""
    if us.size < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return ue[:-1].copy(), us[1:].copy()


def holes(starts: npt.ArrayLike, ends: npt.ArrayLike) -> tuple[I64, I64, I64, I64]:
    """Idle holes between intervals, the way ``nsys analyze -r gpu_gaps`` finds them.

    Sort the starts and, separately, the ends; the j-th smallest end and the (j+1)-th smallest start bound a
    hole when the end comes first. Returns ``(hole_start, hole_end, before, after)``: ``before`` is the
    position (in the input) of the interval whose end opens the hole, ``after`` the one whose start closes it.
    Unlike :func:`gaps` over a :func:`union`, a zero-length interval splits a hole in two (it is GPU work at an
    instant); touching intervals leave no hole. Intervals must have ``end >= start``.
    """
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    if s.size < 2:
        return empty, empty.copy(), empty.copy(), empty.copy()
    so = np.argsort(s, kind="stable")
    eo = np.argsort(e, kind="stable")
    hs = e[eo[:-1]]
    he = s[so[1:]]
    keep = hs < he
    return hs[keep], he[keep], eo[:-1][keep].astype(np.int64), so[1:][keep].astype(np.int64)


def segmented_union_total(group: npt.ArrayLike, starts: npt.ArrayLike, ends: npt.ArrayLike, n_groups: int) -> I64:
    """Length of the union of the intervals of each group (ns), for groups ``0 .. n_groups-1``, vectorized.

    Intervals of one group are merged with each other only; zero-length intervals count nothing.
    """
    g = np.asarray(group, dtype=np.int64)
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    out = np.zeros(n_groups, dtype=np.int64)
    keep = e > s
    g, s, e = g[keep], s[keep], e[keep]
    if g.size == 0:
        return out
    order = np.lexsort((s, g))
    g, s, e = g[order], s[order], e[order]
    # make every group's running maximum independent: shift each group onto its own stretch of the time axis
    first = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    base = np.repeat(s[first], np.diff(np.concatenate((first, [g.size]))))
    extent = int((e - base).max()) + 1
    n_seg = first.size
    if n_seg * extent < np.iinfo(np.int64).max // 4:
        seg = np.repeat(np.arange(n_seg, dtype=np.int64), np.diff(np.concatenate((first, [g.size]))))
        off = seg * extent - base
        us, ue = union(s + off, e + off)
        seg_of = us // extent
        np.add.at(out, g[first][seg_of], ue - us)
        return out
    for a, b in zip(first.tolist(), [*first[1:].tolist(), g.size], strict=True):  # pragma: no cover - huge spans
        us, ue = union(s[a:b], e[a:b])
        out[g[a]] += int((ue - us).sum())
    return out
