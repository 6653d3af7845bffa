"""The compiled row assignment (gputop_trace/model/_rows.c) gives the rows of the numpy reference
(gputop_trace/model/depths.py) on every kind of lane: nested trees, overlaps that do not nest (the greedy packing),
zero-length and negative-length events, equal starts, empty lanes, and too many overlapping events."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.model import depths, native
from tests.conftest import require_compiled

require_compiled(depths._rows is not None, "the compiled row assignment (_rows)", module=True)


def _lanes(rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts: list[int] = []
    durs: list[int] = []
    lanes: list[int] = []
    for lane in range(int(rng.integers(1, 6))):
        n = int(rng.integers(0, 300))
        if kind == "nested":
            t = 0
            for _ in range(n // 10 + 1):
                length = int(rng.integers(10, 400))
                stack = [(t, length)]
                while stack and len(starts) < 10**5:
                    s, d = stack.pop()
                    starts.append(s)
                    durs.append(d)
                    lanes.append(lane)
                    if d > 4 and rng.random() < 0.6:
                        c = int(rng.integers(1, d // 2 + 1))
                        stack.append((s + int(rng.integers(0, d - c + 1)), c))
                t += length + int(rng.integers(0, 5))
        else:
            at = rng.integers(0, 2_000, n)
            lengths = rng.integers(-3, 300, n) if kind == "overlap" else rng.choice([0, 0, 1, 5], n)
            starts += at.tolist()
            durs += lengths.tolist()
            lanes += [lane] * n
    start, dur, lane_ids = (np.array(x, dtype=np.int64) for x in (starts, durs, lanes))
    order = np.lexsort((-dur, start, lane_ids))
    start, dur, lane_ids = start[order], dur[order], lane_ids[order]
    offsets = np.searchsorted(lane_ids, np.arange(int(lane_ids.max(initial=0)) + 2)).astype(np.int64)
    return start, dur, offsets


@pytest.mark.parametrize("kind", ["nested", "overlap", "instants"])
def test_compiled_rows_equal_the_numpy_rows(kind: str) -> None:
    rng = np.random.default_rng({"nested": 1, "overlap": 2, "instants": 3}[kind])
    for _ in range(60):
        start, dur, offsets = _lanes(rng, kind)
        got = depths.assign_depths(start, dur, offsets)
        want = depths.numpy_depths(start, dur, offsets)
        assert got.dtype == want.dtype == np.int16
        assert np.array_equal(got, want)


def test_compiled_rows_of_no_events_and_of_lanes_without_events() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert depths.assign_depths(empty, empty, np.zeros(1, dtype=np.int64)).shape == (0,)
    start = np.array([0, 5, 5], dtype=np.int64)
    dur = np.array([10, 2, 1], dtype=np.int64)
    offsets = np.array([0, 0, 3, 3], dtype=np.int64)
    assert (
        depths.assign_depths(start, dur, offsets).tolist()
        == [0, 1, 2]
        == depths.numpy_depths(start, dur, offsets).tolist()
    )


def test_too_many_overlapping_events_raise_on_both_paths() -> None:
    n = 32_769  # one more row than int16 holds
    start = np.arange(n, dtype=np.int64)
    dur = np.full(n, 10**9, dtype=np.int64)
    offsets = np.array([0, n], dtype=np.int64)
    for assign in (depths.assign_depths, depths.numpy_depths):
        with pytest.raises(OverflowError):
            assign(start, dur, offsets)
    ok = depths.assign_depths(start[:-1], dur[:-1], np.array([0, n - 1], dtype=np.int64))
    assert int(ok.max()) == 32_767


def test_pure_python_env_turns_the_compiled_rows_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert depths.compiled()
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    assert not depths.compiled()


def test_the_compiled_rows_refuse_arrays_of_another_type() -> None:
    _rows = depths._rows
    assert _rows is not None
    start = np.array([0, 1], dtype=np.int64)
    offsets = np.array([0, 2], dtype=np.int64)
    with pytest.raises(TypeError):
        _rows.rows(start.astype(np.float64), start, offsets, np.zeros(2, dtype=np.int16))
    with pytest.raises(TypeError):
        _rows.rows(start, start, offsets, np.zeros(2, dtype=np.int32))
    with pytest.raises(ValueError):
        _rows.rows(start, start, np.array([0, 3], dtype=np.int64), np.zeros(2, dtype=np.int16))
