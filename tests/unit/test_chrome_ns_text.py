"""µs number texts → int64 ns in bulk (``values.tokens_to_ns``): the decimal value rounded half to even, for
every form JSON allows, against Python's ``Decimal`` on the same text."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_EVEN, Decimal

import msgspec
import numpy as np
import pytest

from gputop_trace.parsers.chrome import values


def _decimal_ns(text: bytes) -> tuple[int, int]:
    if not text:
        return 0, values.T_MISSING
    v = Decimal(text.decode()) * 1000
    if abs(v) > values.MAX_ABS_NS:
        return int(values.OUT_OF_RANGE_NS), values.T_FAR
    return int(v.to_integral_value(ROUND_HALF_EVEN)), values.T_OK


def _tokens(seed: int, n: int) -> list[bytes]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        whole = str(rnd.choice([0, rnd.randrange(10 ** rnd.randrange(1, 20))]))
        s = ("-" if rnd.random() < 0.2 else "") + whole
        if rnd.random() < 0.8:
            s += "." + "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(1, 18)))
        if rnd.random() < 0.05:
            s += rnd.choice("eE") + rnd.choice(["", "+", "-"]) + str(rnd.randrange(0, 6))
        out.append(s.encode())
    return out


EDGES = [
    b"",
    b"0",
    b"-0",
    b"0.0005",  # a tie: rounds to the even 0
    b"0.0015",  # a tie: rounds to the even 2
    b"-0.0015",
    b"0.00050000001",
    b"1790857026123456.789",  # epoch µs, 19 significant digits
    b"1790857026123456.7895",
    b"25906.317999999999",  # JAX writes 17 significant digits
    b"4611686018427387.904",  # 2**62 ns: the largest in range
    b"4611686018427387.9041",
    b"-4611686018427387.904",
    b"1790857026123456789",  # 19 digits before the point: ns written as µs, out of range
    b"9999999999999999.999",
    b"1.5e3",
    b"1E-4",
    b"17908570261234567e-1",
]


@pytest.mark.parametrize("impl", ["strings", "bytes"])
def test_bulk_conversion_equals_decimal_rounding(impl: str) -> None:
    tokens = _tokens(7, 5000) + EDGES
    if impl == "strings":
        ns, state = values.tokens_to_ns(tokens)
    else:  # the numpy < 2.3 variant, byte by byte
        ns, state = values._bytes_to_ns(b",".join(tokens), len(tokens), tokens)
    want = [_decimal_ns(t) for t in tokens]
    got = list(zip(ns.tolist(), state.tolist(), strict=True))
    bad = [(t, w, g) for t, w, g in zip(tokens, want, got, strict=True) if w != g]
    assert not bad, bad[:5]
    assert [values.token_to_ns(t) for t in tokens] == want


def test_raw_values_convert_like_bytes() -> None:
    raws = [msgspec.Raw(b"1790857026123456.789"), msgspec.Raw(), msgspec.Raw(b"2.5")]
    ns, state = values.tokens_to_ns(raws)
    assert ns.tolist() == [1790857026123456789, 0, 2500]
    assert state.tolist() == [values.T_OK, values.T_MISSING, values.T_OK]
    assert ns.dtype == np.int64


@pytest.mark.parametrize("bad", [b'"12"', b"null", b"true", b'"1,2"', b"[1]", b"{}"])
def test_a_value_that_is_not_a_number_is_refused(bad: bytes) -> None:
    with pytest.raises(values.NotANumberError):
        values.tokens_to_ns([b"1.5", bad])
