"""Vectorized interval arithmetic on int64 nanosecond intervals ``[start, end)``."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def union(starts: npt.ArrayLike, ends: npt.ArrayLike) -> tuple[I64, I64]:
    """Merge intervals into a sorted list of disjoint intervals (touching intervals are merged).

    Zero-length intervals contribute nothing.
    """
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    s, e = s[keep], e[keep]
    if s.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
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
    pts = np.unique(np.concatenate((as_, ae, bs, be)))
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
