"""``first_seen``: the distinct chunk-local ids in the order they first appear, the rule that gives names,
categories, threads and operator texts their ids in file order on the compiled path."""

from __future__ import annotations

import numpy as np

from gputop_trace.parsers.chrome.values import first_seen


def test_first_seen_gives_the_order_of_first_appearance() -> None:
    assert first_seen(np.array([3, 1, 3, 0, 1], dtype=np.int32), 5).tolist() == [3, 1, 0]
    assert first_seen(np.array([], dtype=np.int32), 4).tolist() == []
    assert first_seen(np.array([2, 2, 2], dtype=np.int32), 3).tolist() == [2]


def test_first_seen_agrees_with_a_sort_on_random_ids() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        k = int(rng.integers(1, 60))
        ids = rng.integers(0, k, int(rng.integers(1, 400))).astype(np.int32)
        values, first = np.unique(ids, return_index=True)
        assert first_seen(ids, k).tolist() == values[np.argsort(first, kind="stable")].tolist()
