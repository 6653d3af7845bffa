"""The counting and comparison forms the analyses use instead of ``np.unique`` / ``np.isin`` (issue 29) give
exactly what those give: ``distinct_ids`` is ``np.unique`` of table ids, ``Trace.of_kind`` is the events whose
kind is one of the kinds, on synthetic edges and on a real trace's columns."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.load.loader import load_paths
from gputop_trace.model.arrays import distinct_ids
from gputop_trace.model.kinds import Kind
from tests.conftest import corpus_file
from tests.synthetic import Synth


@pytest.mark.parametrize(
    "ids",
    [
        np.zeros(0, dtype=np.int32),
        np.array([0], dtype=np.int32),
        np.array([5, 5, 5], dtype=np.int64),
        np.array([9, 0, 3, 3, 0, 7], dtype=np.int32),
        np.arange(1000, dtype=np.int64)[::-1],
        np.array([3, -1, 2, -1], dtype=np.int64),  # not table ids: the general way
    ],
)
def test_distinct_ids_is_np_unique(ids: np.ndarray) -> None:  # type: ignore[type-arg]
    got = distinct_ids(ids)
    assert got.dtype == np.int64
    assert got.tolist() == np.unique(ids).tolist()


def test_of_kind_on_edges() -> None:
    s = Synth()
    t, st = s.thread(), s.stream()
    s.ev(t, Kind.CPU_OP, "op", 0, 10)
    s.kernel(st, 5, 3)
    s.ev(t, Kind.RANGE, "r", 20, 10)
    trace = s.build()
    assert trace.of_kind().tolist() == []
    assert trace.of_kind(Kind.MEMCPY).tolist() == []
    both = trace.of_kind(Kind.RANGE, Kind.CPU_OP, Kind.RANGE)  # a kind given twice counts once
    assert both.dtype == np.int64
    assert both.tolist() == [i for i in range(len(trace)) if trace.kind[i] in (Kind.RANGE, Kind.CPU_OP)]
    assert len(both) == 2 and trace.of_kind(Kind.KERNEL).tolist() == [int(np.flatnonzero(trace.kind == Kind.KERNEL)[0])]


@pytest.mark.corpus
def test_of_kind_and_distinct_ids_on_a_real_trace() -> None:
    trace = load_paths([corpus_file("kineto/h200_gpt_train_small.json.gz")], use_cache=False)
    kinds = sorted({int(k) for k in trace.kind.tolist()})
    for chosen in ([kinds[0]], kinds[:2], kinds, [int(Kind.KERNEL), int(Kind.MEMCPY), int(Kind.MEMSET)]):
        want = np.flatnonzero(np.isin(trace.kind, np.array(chosen, dtype=np.uint8)))
        assert trace.of_kind(*(Kind(k) for k in chosen)).tolist() == want.tolist()
    assert distinct_ids(trace.name).tolist() == np.unique(trace.name).tolist()
    assert distinct_ids(trace.lane).tolist() == np.unique(trace.lane).tolist()


def test_device_busy_pairs_are_the_sorted_distinct_pairs() -> None:
    from gputop_trace.analysis.busy import _distinct_pairs

    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, size=500).astype(np.int64)
    b = rng.integers(-2, 9, size=500).astype(np.int64)
    assert _distinct_pairs(a, b) == sorted(set(zip(a.tolist(), b.tolist(), strict=True)))
    assert _distinct_pairs(a[:0], b[:0]) == []
