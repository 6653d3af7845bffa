"""The model's ``distinct``, ``isin`` and ``percentile`` (gputop_trace/model/arrays.py) give numpy's ``np.unique``,
``np.isin`` and ``np.percentile`` exactly (values, dtype, to the bit), on random and edge inputs: empty, one value,
negative ids, long test lists, the percentiles at and between the ends."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.model.arrays import distinct, isin, percentile


@pytest.mark.parametrize("seed", range(4))
def test_distinct_and_isin_equal_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(400):
        dtype = (np.int8, np.uint8, np.int32, np.int64)[int(rng.integers(0, 4))]
        v = rng.integers(-5, 120, int(rng.integers(0, 60))).astype(dtype)
        t = rng.integers(-5, 120, int(rng.integers(0, 40))).astype(np.int64)
        d = distinct(v)
        assert d.dtype == np.unique(v).dtype and np.array_equal(d, np.unique(v))
        assert np.array_equal(isin(v, t), np.isin(v, t))
        assert np.array_equal(isin(v, list(t.tolist())), np.isin(v, t))


def test_isin_keeps_the_shape_and_takes_an_empty_test() -> None:
    v = np.arange(12).reshape(3, 4)
    assert np.array_equal(isin(v, [1, 5, 11]), np.isin(v, [1, 5, 11]))
    assert not isin(v, np.zeros(0, dtype=np.int64)).any()


@pytest.mark.parametrize("seed", range(4))
def test_percentile_equals_numpy_to_the_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for i in range(3000):
        n = int(rng.integers(1, 50))
        a = rng.integers(-(10**12), 10**12, n) if i % 2 else rng.random(n) * 1e9
        q = float(rng.choice([0.0, 10.0, 25.0, 50.0, 75.0, 99.0, 100.0, rng.random() * 100]))
        assert percentile(a, q) == float(np.percentile(a, q)), (a.tolist(), q)


def test_percentile_of_nothing_is_nan() -> None:
    assert np.isnan(percentile(np.zeros(0, dtype=np.int64), 25))
