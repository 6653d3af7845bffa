"""Value conversions shared by the Chrome loader's steps: µs timestamps → int64 ns, lenient integer readers,
dense ids.

Timestamps and durations are read from their decimal text (``msgspec.Raw`` spans of the JSON), never through a
float: ``1790857026123456.789`` µs is ``1790857026123456789`` ns exactly. :func:`tokens_to_ns` converts a
chunk's tokens in bulk with numpy (no Python call per value, no ``Decimal``); exponent forms (``1.5e3``), rare in
traces, go through :func:`token_to_ns` (Python integers). Rounding is half to even at the nanosecond, on the
exact decimal value; the compiled scanner (``_fastscan.c``) implements the same rule.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.parsers.chrome import scanner

#: the largest |timestamp| or duration the model holds: 2**62 ns (about 146 years), with room for differences;
#: beyond it a value is no time (an epoch in ns written as µs, a corrupted number)
MAX_ABS_NS = 2**62
#: the same limit in µs (as a float, for values that are floats already: counters' values are not times)
MAX_ABS_US = float(MAX_ABS_NS) / 1000.0
#: what the conversions give for a value beyond :data:`MAX_ABS_NS` (or not a finite number)
OUT_OF_RANGE_NS = np.iinfo(np.int64).min
#: states :func:`tokens_to_ns` gives each value
T_OK, T_MISSING, T_FAR = 0, 1, 2

_POW10 = np.array([10**k for k in range(19)], dtype=np.int64)
_MAX_INT_US = MAX_ABS_NS // 1000  # 4611686018427387: the largest whole µs in range
_NUMBER = re.compile(rb"\s*(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?\s*")


class NotANumberError(ValueError):
    """A ``ts``/``dur`` token is not a JSON number (a string, ``null``, an object): the lenient path reads it."""


def token_to_ns(token: bytes | Any) -> tuple[int, int]:
    """One µs number's text → (ns rounded half to even, state: :data:`T_OK`, :data:`T_MISSING` for empty text,
    :data:`T_FAR` beyond :data:`MAX_ABS_NS`). Python integers: for exponent forms and single values.
    Raises :class:`NotANumberError` when the text is not a JSON number."""
    text = bytes(token)
    if not text:
        return 0, T_MISSING
    m = _NUMBER.fullmatch(text)
    if m is None:
        raise NotANumberError(text[:40].decode("utf-8", "replace"))
    sign, whole, frac, exp = m.groups()
    frac = frac or b""
    digits = int(whole + frac)
    shift = (int(exp) if exp else 0) - len(frac) + 3  # ns = digits * 10**shift
    if digits == 0:
        return 0, T_OK
    if shift >= 0:
        if shift > 40:
            return int(OUT_OF_RANGE_NS), T_FAR
        ns = digits * 10**shift
        far = ns > MAX_ABS_NS
    else:
        div = 10 ** min(-shift, len(whole) + len(frac) + 2)  # beyond every digit: the value rounds to 0
        ns, rem = divmod(digits, div)
        far = ns > MAX_ABS_NS or (ns == MAX_ABS_NS and rem > 0)
        if 2 * rem > div or (2 * rem == div and ns % 2 == 1):
            ns += 1
    if far:
        return int(OUT_OF_RANGE_NS), T_FAR
    return (-ns if sign else ns), T_OK


def tokens_to_ns(tokens: Sequence[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """µs numbers' texts (``msgspec.Raw`` or bytes; empty = missing) → (int64 ns, uint8 state), in bulk.

    Missing values give 0 ns and :data:`T_MISSING`; values beyond :data:`MAX_ABS_NS` give
    :data:`OUT_OF_RANGE_NS` and :data:`T_FAR`. Raises :class:`NotANumberError` when a token is not a JSON number.
    """
    n = len(tokens)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    joined = b",".join(tokens)
    if joined.count(b",") != n - 1:  # a comma inside a token: a string or a structure, not a number
        raise NotANumberError("a value that is not a number")
    texts = np.array(joined.split(b","))
    if _has_strings():
        return _texts_to_ns(texts, tokens)
    return _bytes_to_ns(joined, n, tokens)  # pragma: no cover - numpy < 2.3


@functools.cache
def _has_strings() -> bool:
    """Whether numpy has ``np.strings.slice`` (2.3 and later; asked when first needed: the first look at
    ``np.strings`` imports it, a millisecond of every load otherwise)."""
    return hasattr(np, "strings") and hasattr(np.strings, "slice")


_NUMBER_CHARS = b"0123456789.-"


def _texts_to_ns(texts: npt.NDArray[Any], tokens: Sequence[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """:func:`tokens_to_ns` with numpy's string functions (one C loop per step, over all tokens)."""
    n = len(texts)
    sp = np.strings
    state = np.zeros(n, dtype=np.uint8)
    lens = sp.str_len(texts)
    missing = lens == 0
    state[missing] = T_MISSING
    neg = sp.startswith(texts, b"-")
    dot = sp.find(texts, b".")
    dot = np.where(dot < 0, lens, dot)
    # plain numbers only (digits, one point, a sign): anything else (exponents, junk) goes one by one
    plain = sp.str_len(sp.strip(texts, _NUMBER_CHARS)) == 0
    slow = ~plain | (dot - neg > 16)  # ≥ 1e16 µs: beyond range; the exact path says so
    slow &= ~missing
    other = slow | missing
    if other.any():
        texts = np.where(other, b"0", texts)
        dot = np.where(other, 1, dot)
        neg &= ~other
    whole = sp.slice(texts, neg.astype(np.int64), dot).astype(np.int64)
    frac = sp.slice(texts, dot + 1, None)
    f3 = sp.ljust(sp.slice(frac, 0, 3), 3, b"0").astype(np.int64)
    r = sp.ljust(sp.slice(frac, 3, 4), 1, b"0").astype(np.int64)
    sticky = sp.str_len(sp.rstrip(sp.slice(frac, 4, None), b"0")) > 0  # type: ignore[arg-type]
    far = whole > _MAX_INT_US
    trunc = np.where(far, 0, whole) * 1000 + f3
    far |= (trunc > MAX_ABS_NS) | ((trunc == MAX_ABS_NS) & ((r > 0) | sticky))
    mag = trunc + ((r > 5) | ((r == 5) & (sticky | (trunc % 2 == 1))))
    ns = np.where(neg, -mag, mag)
    ns[missing] = 0
    ns[far] = OUT_OF_RANGE_NS
    state[far] = T_FAR
    for i in np.flatnonzero(slow).tolist():
        ns[i], state[i] = token_to_ns(tokens[i])
    return ns, state


def _bytes_to_ns(joined: bytes, n: int, tokens: Sequence[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """:func:`tokens_to_ns` byte by byte in numpy (for numpy without ``np.strings.slice``)."""
    ns = np.zeros(n, dtype=np.int64)
    state = np.zeros(n, dtype=np.uint8)
    a = np.frombuffer(joined + b",", dtype=np.uint8)
    ends = np.flatnonzero(a == 44)
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lens = ends - starts
    state[lens == 0] = T_MISSING
    tok = np.repeat(np.arange(n), lens + 1)  # token of every byte (the comma after a token counts to it)
    digit = a - np.uint8(48)
    isdig = digit <= 9
    odd = ~(isdig | (a == 46) | (a == 45) | (a == 44))
    slow = np.zeros(n, dtype=bool)
    if odd.any():  # exponent forms (or junk): one by one
        slow[tok[odd]] = True
    dotpos = ends.copy()
    di = np.flatnonzero(a == 46)
    dotpos[tok[di]] = di
    neg = a[starts] == 45
    slow |= dotpos - starts - neg > 16
    k = np.arange(len(a)) - dotpos[tok]  # < 0: integer digits (-1 = units); > 0: fraction digits (1 = tenths)
    d = np.where(isdig, digit, 0).astype(np.int64)
    ip = np.add.reduceat(np.where(k < 0, d * _POW10[np.clip(-k - 1, 0, 18)], 0), starts)
    f3 = np.add.reduceat(np.where((k > 0) & (k <= 3), d * _POW10[np.clip(3 - k, 0, 18)], 0), starts)
    r = np.add.reduceat(np.where(k == 4, d, 0), starts)
    sticky = np.add.reduceat((k > 4) & (d > 0), starts) > 0
    far = ip > _MAX_INT_US
    trunc = np.where(far, 0, ip) * 1000 + f3
    far |= (trunc > MAX_ABS_NS) | ((trunc == MAX_ABS_NS) & ((r > 0) | sticky))
    up = (r > 5) | ((r == 5) & (sticky | (trunc % 2 == 1)))
    mag = trunc + up
    ns[:] = np.where(neg, -mag, mag)
    far &= ~slow
    ns[far] = OUT_OF_RANGE_NS
    state[far] = T_FAR
    for i in np.flatnonzero(slow & (lens > 0)).tolist():
        ns[i], state[i] = token_to_ns(tokens[i])
    return ns, state


def float_to_ns(arr: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """µs floats → int64 ns, rounded half to even; beyond :data:`MAX_ABS_US` (or not finite):
    :data:`OUT_OF_RANGE_NS`. Exact for the |µs| below 2**43 a chunk holds when it is not read from the text."""
    ok = np.abs(arr) <= MAX_ABS_US
    if ok.all():
        return np.rint(arr * 1000.0).astype(np.int64)
    out = np.rint(np.where(ok, arr, 0.0) * 1000.0).astype(np.int64)
    out[~ok] = OUT_OF_RANGE_NS
    return out


def us_value(v: Any) -> float:
    """A ts as a float, for messages (its text, or the float a lenient read made)."""
    return float(v) if isinstance(v, (int, float)) else float(bytes(v))


def one_ns(v: Any) -> int:
    """One µs value (number text, or a float/int) → int ns (see :func:`tokens_to_ns`)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not abs(float(v)) <= MAX_ABS_US:
            return int(OUT_OF_RANGE_NS)
        return round(float(v) * 1000.0) if isinstance(v, float) else v * 1000
    ns, state = token_to_ns(v)
    return int(OUT_OF_RANGE_NS) if state == T_FAR else ns


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


def first_seen(local: np.ndarray[Any, Any], k: int) -> np.ndarray[Any, Any]:
    """The distinct values of ``local`` (ints in ``[0, k)``) in the order they first appear (no sort of
    ``local``: the first place of each value in one pass)."""
    n = len(local)
    first = np.full(k, n, dtype=np.int64)
    np.minimum.at(first, local, np.arange(n, dtype=np.int64))
    present = np.flatnonzero(first < n)
    out: np.ndarray[Any, Any] = present[np.argsort(first[present], kind="stable")]
    return out


def local_to_global(local: np.ndarray[Any, Any], keys: list[Any], table: dict[Any, int]) -> np.ndarray[Any, Any]:
    """Chunk-local ids → the file's dense ids in ``table``; new keys get ids in the order they first appear in
    ``local`` (file order, as :func:`dense_ids` gives them)."""
    if len(local) == 0:
        return np.zeros(0, dtype=np.int64)
    m = map_local_ids(local, keys, table)
    out: np.ndarray[Any, Any] = m[local]
    return out


def map_local_ids(
    local: np.ndarray[Any, Any], keys: list[Any], table: dict[Any, int], new: Callable[[Any], int] | None = None
) -> np.ndarray[Any, Any]:
    """The table's id of each of ``keys`` (-1 for those ``local`` does not hold), looking up each key that ``local``
    holds in ``table`` in the order its id first appears there; a key not in it is added with the id ``new(key)``,
    or ``len(table)`` (the next dense id) when ``new`` is None. On the compiled path one pass in C
    (:func:`~gputop_trace.parsers.chrome.scanner.map_ids`); the same loop over :func:`first_seen` in Python
    otherwise (``GPUTOP_PURE_PYTHON=1``, no compiled scanner)."""
    got = scanner.map_ids(np.ascontiguousarray(local), keys if isinstance(keys, list) else list(keys), table, new)
    if got is not None:
        return np.frombuffer(got, dtype=np.int64)
    m = np.full(len(keys), -1, dtype=np.int64)
    for u in first_seen(local, len(keys)).tolist():
        k = keys[u]
        g = table.get(k)
        if g is None:
            g = table[k] = len(table) if new is None else new(k)
        m[u] = g
    return m
