"""The distinct rows of the classification (parsers/chrome/classify.py): the same first rows and row ids as
``np.unique(..., axis=1, return_index=True, return_inverse=True)``, by the table and by the sort."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.parsers.chrome import classify


def _reference(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    _, first, inverse = np.unique(
        np.stack([c.astype(np.int64) for c in cols]), axis=1, return_index=True, return_inverse=True
    )
    return first, np.asarray(inverse).reshape(-1)


@pytest.mark.parametrize("slots", [0, classify.TABLE_SLOTS_PER_ROW, 10**9], ids=["sort", "default", "table"])
def test_distinct_rows_equal_numpy_unique(monkeypatch: pytest.MonkeyPatch, slots: int) -> None:
    monkeypatch.setattr(classify, "TABLE_SLOTS_PER_ROW", slots)
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 2000))
        cols = [
            rng.integers(int(rng.integers(-5, 3)), int(rng.integers(3, 30)), n).astype(dt)
            for dt in [(np.int32, np.int64, np.int16)[int(i)] for i in rng.integers(0, 3, int(rng.integers(1, 5)))]
        ]
        first, inverse = classify._distinct_rows(cols)
        want_first, want_inverse = _reference(cols)
        assert np.array_equal(first, want_first)
        assert np.array_equal(inverse, want_inverse)


def test_many_distinct_rows_by_the_table() -> None:
    """More than 2**16 distinct keys: the first rows are found without the 16-bit radix sort."""
    rng = np.random.default_rng(3)
    key = rng.permutation(np.repeat(np.arange(70_000, dtype=np.int64), 2))
    first, inverse = classify._distinct_keys_by_table(key, 70_000)
    _, want_first, want_inverse = np.unique(key, return_index=True, return_inverse=True)
    assert np.array_equal(first, want_first) and np.array_equal(inverse, want_inverse)
