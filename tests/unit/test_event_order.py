"""The events' order (model/order.py) and rows (model/depths.py) on arrays built to hit their edges: the order is
``np.lexsort((-dur, start, lane))`` exactly, ties and all; rows never overlap and nested events get their depth,
whichever way (radix or lexsort) the rows are checked."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.model import depths
from gputop_trace.model.depths import assign_depths
from gputop_trace.model.order import event_order


@pytest.mark.parametrize("seed", range(40))
def test_the_order_is_lexsort_of_lane_start_and_longest_first(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    lane = rng.integers(0, int(rng.integers(1, 9)), n).astype(np.int32)
    start = rng.integers(-50, int(rng.integers(1, 400)), n).astype(np.int64)  # many equal starts
    dur = rng.integers(0, 5, n).astype(np.int64)  # and equal durations among them: file order decides
    assert np.array_equal(event_order(lane, start, dur), np.lexsort((-dur, start, lane)))


def test_the_order_of_times_too_far_apart_to_pack_is_still_lexsort() -> None:
    lane = np.array([3, 0, 3, 1, 0], dtype=np.int32)
    start = np.array([2**62, -(2**62), 2**62, 0, -(2**62)], dtype=np.int64)
    dur = np.array([1, 5, 7, 0, 5], dtype=np.int64)
    assert np.array_equal(event_order(lane, start, dur), np.lexsort((-dur, start, lane)))
    assert event_order(lane, start, dur).tolist() == [1, 4, 3, 2, 0]


def test_no_events_no_order() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert event_order(empty.astype(np.int32), empty, empty).shape == (0,)


def _rows_overlap(start: np.ndarray, dur: np.ndarray, rows: np.ndarray) -> bool:
    end = np.where(dur > 0, start + dur, start)
    for r in np.unique(rows):
        i = np.flatnonzero(rows == r)
        s, e = start[i], end[i]
        if np.any(s[1:] < e[:-1]) or np.any((s[1:] == s[:-1]) & (dur[i][1:] == 0) & (dur[i][:-1] == 0)):
            return True
    return False


@pytest.mark.parametrize("radix", [True, False], ids=["radix", "lexsort"])
@pytest.mark.parametrize("seed", range(12))
def test_rows_never_overlap_and_nesting_is_depth(seed: int, radix: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not radix:  # the check that rows are disjoint as it runs for a lane of 2**16 rows and more (same answer)
        real = depths._rows_are_disjoint
        monkeypatch.setattr(depths, "_rows_are_disjoint", lambda ls, le, rows: real(ls, le, rows + 2**16))
    rng = np.random.default_rng(seed)
    # properly nested call trees (each child inside its parent); with an odd seed the trees overlap one another
    separate = seed % 2 == 0
    starts: list[int] = []
    durs: list[int] = []
    want: list[int] = []

    def tree(at: int, length: int, level: int) -> None:
        starts.append(at)
        durs.append(length)
        want.append(level)
        t = at
        while level < 6 and t < at + length - 4 and rng.random() < 0.7:
            d = int(rng.integers(1, max(2, (at + length - t) // 2)))
            tree(t, d, level + 1)
            t += d + int(rng.integers(0, 3))

    t = 0
    for _ in range(30):
        length = int(rng.integers(20, 200))
        tree(t, length, 0)
        t += (length if separate else 0) + int(rng.integers(0, 250))
    start, dur = np.array(starts, dtype=np.int64), np.array(durs, dtype=np.int64)
    order = np.lexsort((-dur, start))
    start, dur, want_depth = start[order], dur[order], np.array(want)[order]
    one_lane = np.array([0, len(start)], dtype=np.int64)
    rows = assign_depths(start, dur, one_lane)
    assert not _rows_overlap(start, dur, rows)
    if separate:  # nothing overlaps without nesting: every row is the nesting depth
        assert np.array_equal(rows, want_depth)


@pytest.mark.parametrize("threads", [2, 3, 7])
@pytest.mark.parametrize("seed", range(6))
def test_the_order_sorted_in_lane_groups_on_threads_is_the_same(
    seed: int, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from gputop_trace.model import order as order_mod

    monkeypatch.setattr(order_mod, "PARALLEL_SORT_EVENTS", 1)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20_000))
    lanes = int(rng.integers(1, 12))
    # one lane may hold most events (groups of unequal size), lanes may be unused, starts and durations repeat
    lane = np.where(rng.random(n) < 0.6, lanes // 2, rng.integers(0, lanes, n)).astype(np.int32) + 3
    start = rng.integers(-50, int(rng.integers(1, 800)), n).astype(np.int64)
    dur = rng.integers(0, 4, n).astype(np.int64)
    with ThreadPoolExecutor(max_workers=threads - 1) as pool:
        got = event_order(lane, start, dur, pool=pool, threads=threads)
    assert np.array_equal(got, np.lexsort((-dur, start, lane)))
