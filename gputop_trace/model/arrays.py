"""numpy array aliases of the model (one definition each; every layer imports them from here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
I16 = npt.NDArray[np.int16]
U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def distinct(values: npt.ArrayLike) -> npt.NDArray[Any]:
    """The distinct values of an array, ascending, in its dtype: ``np.unique(values)`` for integers, without its
    masked-array check, which imports ``numpy.ma`` (several ms of every command's start)."""
    v = np.sort(np.asarray(values).ravel())
    if len(v) < 2:
        return v
    keep = np.empty(len(v), dtype=bool)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]


def isin(values: npt.ArrayLike, test: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """``np.isin(values, test)`` for integers (whether each value is one of ``test``), without the masked-array
    check of the ``np.unique`` inside it (which imports ``numpy.ma``): a few comparisons where ``test`` is short,
    else a binary search in its distinct values."""
    v = np.asarray(values)
    t = distinct(test)
    if len(t) <= _FEW:
        out = np.zeros(v.shape, dtype=bool)
        for x in t.tolist():
            out |= v == x
        return out
    i = np.searchsorted(t, v)
    np.minimum(i, len(t) - 1, out=i)
    return np.asarray(t[i] == v)


#: ``test`` values up to which :func:`isin` compares one by one
_FEW = 8


def percentile(values: npt.ArrayLike, q: float) -> float:
    """``float(np.percentile(values, q))`` of a 1-D array (``q`` in %, numpy's default linear method, to the bit),
    without the ``np.unique`` inside numpy's (which imports ``numpy.ma``); NaN for no values."""
    v = np.sort(np.asarray(values).ravel())
    n = len(v)
    if not n:
        return float("nan")
    quantile = q / 100
    virtual = (n - 1) * quantile  # numpy's virtual index of its linear method (Hyndman & Fan's 7th)
    if virtual >= n - 1:
        return float(v[-1])
    if virtual < 0:
        return float(v[0])
    below = int(virtual // 1)
    gamma = virtual - below
    a, b = v[below], v[below + 1]
    diff = b - a
    # numpy's _lerp: from below for gamma < 0.5, from above otherwise
    return float(b - diff * (1 - gamma)) if gamma >= 0.5 else float(a + diff * gamma)


def distinct_ids(ids: npt.NDArray[np.integer[Any]]) -> I64:
    """The distinct values of ids that index a table (name ids, lane ids: small and non-negative), ascending, as
    ``np.unique`` gives them (int64): by counting, one pass, where ``np.unique`` sorts or hashes (a few ms on
    the 400 k-event columns a summary goes through, tens of times)."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    if int(ids.min()) < 0:  # not ids of a table: the general way
        return distinct(ids).astype(np.int64)
    return np.flatnonzero(np.bincount(ids))
