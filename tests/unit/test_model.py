"""The columnar model: sorting, row packing, side tables, merging."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.depths import assign_depths
from gputop_trace.model.kinds import CopyKind, FlowKind, Kind, LaneKind
from gputop_trace.model.merge import merge_traces
from gputop_trace.model.tables import Lane, TraceMeta
from gputop_trace.model.trace import Trace


def _build(events: list[tuple[int, int, int]], lanes: int = 1) -> Trace:
    b = TraceBuilder("test")
    for i in range(lanes):
        b.lane(i, Lane(kind=LaneKind.CPU_THREAD, name=f"t{i}", tid=i))
    name = b.names.intern("e")
    s, d, ln = zip(*events, strict=True) if events else ((), (), ())
    b.add_events(start_ns=list(s), dur_ns=list(d), kind=Kind.CPU_OP, lane=list(ln), name=name)
    return b.build(TraceMeta(format="test"))


def test_nested_events_get_their_nesting_depth() -> None:
    # parent [100,200), child [110,150), grandchild [120,130), sibling [160,190)
    t = _build([(120, 10, 0), (100, 100, 0), (160, 30, 0), (110, 40, 0)])
    assert t.start_ns.tolist() == [0, 10, 20, 60]  # relative to the first start
    assert t.depth.tolist() == [0, 1, 2, 1]


def test_overlapping_events_are_never_dropped_and_rows_never_overlap() -> None:
    # partial overlaps that do not nest (GPU kernels a few ns apart after rounding)
    ev = [(0, 10, 0), (5, 10, 0), (12, 10, 0), (14, 2, 0), (30, 0, 0), (30, 5, 0)]
    t = _build(ev)
    assert len(t) == len(ev)
    for row in range(int(t.depth.max()) + 1):
        idx = t.row_events(0, row)
        s, e = t.start_ns[idx], t.end_ns[idx]
        assert np.all(s[1:] >= e[:-1]), f"row {row} overlaps"


def test_zero_length_event_at_the_end_of_another_stays_on_the_same_row() -> None:
    t = _build([(0, 10, 0), (10, 0, 0)])
    assert t.depth.tolist() == [0, 0]


def test_identical_events_stack() -> None:
    t = _build([(0, 10, 0), (0, 10, 0), (0, 10, 0)])
    assert sorted(t.depth.tolist()) == [0, 1, 2]


def test_lanes_are_contiguous_slices() -> None:
    t = _build([(5, 1, 1), (0, 1, 0), (3, 1, 1), (1, 1, 0)], lanes=2)
    assert t.lane_offsets.tolist() == [0, 2, 4]
    assert t.lane[t.lane_slice(1)].tolist() == [1, 1]
    assert t.start_ns[t.lane_slice(1)].tolist() == [3, 5]


def test_side_tables_follow_events_through_the_sort() -> None:
    b = TraceBuilder("test")
    gpu = b.lane("s", Lane(kind=LaneKind.GPU_STREAM, name="stream 7", device=0, stream=7))
    cpu = b.lane("c", Lane(kind=LaneKind.CPU_THREAD, name="main", pid=1, tid=1))
    k = b.names.intern("kernel")
    c = b.names.intern("copy")
    a = b.names.intern("cudaLaunchKernel")
    idx = b.add_events(
        start_ns=[300, 100, 50, 10],
        dur_ns=[10, 20, 5, 5],
        kind=[Kind.KERNEL, Kind.MEMCPY, Kind.API, Kind.API],
        lane=[gpu, gpu, cpu, cpu],
        name=[k, c, a, a],
    )
    b.add_kernels(event=[idx[0]], grid=[[4, 1, 1]], block=[[128, 1, 1]], registers=[32])
    b.add_copies(event=[idx[1]], bytes=[4096], direction=[CopyKind.HTOD])
    b.add_flows([idx[2]], [idx[0]], FlowKind.LAUNCH)
    t = b.build(TraceMeta(format="test"))
    kern = int(t.kernels.event[0])
    assert t.names[t.name[kern]] == "kernel"
    assert t.kernels.grid[0].tolist() == [4, 1, 1]
    cp = int(t.copies.event[0])
    assert t.names[t.name[cp]] == "copy" and int(t.copies.bytes[0]) == 4096
    assert t.launch_of[kern] >= 0
    assert t.names[t.name[t.launch_of[kern]]] == "cudaLaunchKernel"
    assert t.start_ns[t.launch_of[kern]] == 40  # 50 - t0 (10)


def test_columns_are_read_only() -> None:
    t = _build([(0, 1, 0)])
    with pytest.raises(ValueError):
        t.start_ns[0] = 5


def test_merge_keeps_every_event_and_puts_ranks_on_one_time_axis() -> None:
    a = _build([(1000, 10, 0), (1020, 5, 0)])
    b = _build([(500, 10, 0)])
    m = merge_traces([a, b])
    assert len(m) == 3
    assert len(m.lanes) == 2
    assert sorted((m.start_ns + m.meta.t0_ns).tolist()) == [500, 1000, 1020]


def test_assign_depths_handles_large_overlap_counts_with_greedy_fallback() -> None:
    rng = np.random.default_rng(1)
    s = np.sort(rng.integers(0, 10_000, 5_000)).astype(np.int64)
    d = rng.integers(0, 500, 5_000).astype(np.int64)
    order = np.lexsort((-d, s))
    s, d = s[order], d[order]
    depth = assign_depths(s, d, np.array([0, len(s)], dtype=np.int64))
    e = s + d
    for r in np.unique(depth):
        sel = np.flatnonzero(depth == r)
        zs = np.where(d[sel] > 0, e[sel], s[sel])
        assert np.all(s[sel][1:] >= zs[:-1])
