"""Value conversions shared by the Chrome loader's steps: µs timestamps → int64 ns, lenient integer readers,
dense ids."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Decimal
from itertools import compress, repeat
from typing import Any

import numpy as np

#: the largest |timestamp| or duration in µs the model holds: int64 ns with room for differences (2**62 ns,
#: about 146 years); beyond it a value is no time (an epoch in ns written as µs, a corrupted number)
MAX_ABS_US = float(2**62) / 1000.0
#: what :func:`to_ns` gives for a value beyond :data:`MAX_ABS_US`
OUT_OF_RANGE_NS = np.iinfo(np.int64).min


def to_ns(values: Iterable[Any], exact: bool) -> np.ndarray[Any, Any]:
    """µs values (float or Decimal) → int64 ns, rounded to the nearest ns (never to whole µs); values beyond
    :data:`MAX_ABS_US` (or not finite) become :data:`OUT_OF_RANGE_NS`."""
    if exact:
        return np.array([one_ns(v, True) for v in values], dtype=np.int64)
    arr = values if isinstance(values, np.ndarray) else np.fromiter(values, np.float64)
    ok = np.abs(arr) <= MAX_ABS_US
    if ok.all():
        return np.rint(arr * 1000.0).astype(np.int64)
    out = np.rint(np.where(ok, arr, 0.0) * 1000.0).astype(np.int64)
    out[~ok] = OUT_OF_RANGE_NS
    return out


def one_ns(v: Any, exact: bool) -> int:
    """One µs value → int ns (see :func:`to_ns`)."""
    if not abs(float(v)) <= MAX_ABS_US:
        return int(OUT_OF_RANGE_NS)
    if exact:
        return int((Decimal(v) * 1000).to_integral_value(ROUND_HALF_EVEN))
    return round(float(v) * 1000.0)


def dense_ids(table: dict[Any, int], keys: list[Any]) -> np.ndarray[Any, Any]:
    """Dense ids of ``keys`` from ``table``; keys not in it yet are added in the order they first appear."""
    got = list(map(table.get, keys))
    if None in got:
        for k in compress(keys, map(operator.is_, got, repeat(None))):
            if k not in table:
                table[k] = len(table)
        got = list(map(table.__getitem__, keys))
    return np.array(got, dtype=np.int64)


def int_or(v: Any, default: int) -> int:
    if isinstance(v, bool):
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    return default


def stable_int(v: Any) -> int:
    """An int id for a pid/tid that may be a string (string ids get a negative stable hash-free id)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return -1
