"""Transfer overlap on synthetic traces: other-stream overlap, exposed totals, per-direction rows, flags."""

from __future__ import annotations

from gputop_trace.analysis.transfers import transfer_overlap
from gputop_trace.model.kinds import CopyKind, MemKind
from tests.synthetic import Synth

US = 1_000


def test_copy_overlaps_only_kernels_on_other_streams() -> None:
    s = Synth()
    compute, side = s.stream(7), s.stream(13)
    s.kernel(compute, 0, 100 * US)
    c_side = s.copy(side, 50 * US, 100 * US)  # half under the kernel of stream 7
    s.kernel(side, 200 * US, 10 * US)
    s.copy(side, 150 * US, 40 * US)  # only its own stream's kernel nearby: no overlap
    t = s.build()
    rep = transfer_overlap(t)
    rows = {r.start_ns: r for r in rep.copies}
    assert (rows[50 * US].overlap_ns, rows[50 * US].exposed_ns) == (50 * US, 50 * US)
    assert rows[50 * US].hidden_pct == 50.0
    assert (rows[150 * US].overlap_ns, rows[150 * US].exposed_ns) == (0, 40 * US)
    assert c_side >= 0


def test_same_stream_kernels_never_hide_a_copy() -> None:
    s = Synth()
    st7 = s.stream(7)
    s.kernel(st7, 0, 100 * US)
    s.copy(st7, 10 * US, 20 * US)  # overlapping in time (clock rounding) but on the same stream
    (row,) = transfer_overlap(s.build()).copies
    assert row.overlap_ns == 0 and row.exposed_ns == 20 * US


def test_overlapping_kernels_on_other_streams_count_once() -> None:
    s = Synth()
    a, b, c = s.stream(1), s.stream(2), s.stream(3)
    s.kernel(a, 0, 60 * US)
    s.kernel(b, 40 * US, 60 * US)  # overlaps the first: together they cover [0, 100)
    s.copy(c, 20 * US, 100 * US)
    (row,) = transfer_overlap(s.build()).copies
    assert row.overlap_ns == 80 * US and row.exposed_ns == 20 * US


def test_zero_length_copy_is_neither_exposed_nor_overlapped() -> None:
    s = Synth()
    s.kernel(s.stream(1), 0, 10 * US)
    s.copy(s.stream(2), 5 * US, 0)
    (row,) = transfer_overlap(s.build()).copies
    assert (row.overlap_ns, row.exposed_ns, row.hidden_pct, row.bytes_per_s) == (0, 0, 100.0, 0.0)


def test_device_exposed_time_is_the_copy_union_minus_the_kernel_union() -> None:
    s = Synth()
    k, c1, c2 = s.stream(1), s.stream(2), s.stream(3)
    s.kernel(k, 0, 50 * US)
    s.copy(c1, 30 * US, 50 * US)  # [30, 80)
    s.copy(c2, 60 * US, 40 * US)  # [60, 100): overlaps the other copy
    rep = transfer_overlap(s.build())
    (dev,) = rep.devices
    assert dev.copy_ns == 70 * US  # union of copies [30, 100)
    assert dev.exposed_ns == 50 * US  # minus the kernel's [30, 50)
    assert rep.exposed_ns == 50 * US
    # per copy, exposed time adds up to more: the two copies overlap each other
    assert sum(r.exposed_ns for r in rep.copies) == 30 * US + 40 * US


def test_by_direction_groups_direction_and_host_memory_with_bandwidth() -> None:
    s = Synth()
    st2 = s.stream(2)
    s.copy(st2, 0, 10 * US, direction=CopyKind.HTOD, src=MemKind.PAGEABLE, nbytes=1_000_000)
    s.copy(st2, 20 * US, 10 * US, direction=CopyKind.HTOD, src=MemKind.PAGEABLE, nbytes=1_000_000)
    s.copy(st2, 40 * US, 5 * US, direction=CopyKind.DTOH, src=MemKind.DEVICE, dst=MemKind.PINNED, nbytes=500)
    s.copy(st2, 50 * US, 5 * US, direction=CopyKind.DTOD, src=MemKind.DEVICE, dst=MemKind.DEVICE)
    s.copy(st2, 60 * US, 1 * US, memset=True, dst=MemKind.DEVICE, nbytes=64)
    rows = {(r.direction, r.host_memory): r for r in transfer_overlap(s.build()).by_direction}
    assert set(rows) == {("HtoD", "pageable"), ("DtoH", "pinned"), ("DtoD", None), ("memset", None)}
    h = rows[("HtoD", "pageable")]
    assert (h.count, h.bytes, h.time_ns, h.exposed_ns) == (2, 2_000_000, 20 * US, 20 * US)
    assert h.bytes_per_s == 1e11  # 2 MB in 20 µs


def _flags_of(s: Synth) -> dict[int, tuple[str, ...]]:
    return {r.start_ns: r.flags for r in transfer_overlap(s.build()).copies}


def test_pageable_async_copy_is_flagged_pinned_is_not() -> None:
    s = Synth()
    th, st2 = s.thread(), s.stream(2)
    a = s.launch(th, 0, 5 * US, "cudaMemcpyAsync")
    s.copy(st2, 10 * US, 5 * US, src=MemKind.PAGEABLE, launch=a)
    b = s.launch(th, 20 * US, 5 * US, "cudaMemcpyAsync")
    s.copy(st2, 30 * US, 5 * US, src=MemKind.PINNED, launch=b)
    c = s.launch(th, 40 * US, 5 * US, "cudaMemcpyAsync")
    s.copy(st2, 50 * US, 5 * US, direction=CopyKind.DTOH, src=MemKind.DEVICE, dst=MemKind.PAGEABLE, launch=c)
    flags = _flags_of(s)
    assert flags[10 * US] == ("pageable_async",)
    assert flags[30 * US] == ()
    assert flags[50 * US] == ("pageable_async",)


def test_sync_copy_is_flagged_except_small_host_to_device() -> None:
    s = Synth()
    th, st2 = s.thread(), s.stream(2)
    for i, (direction, nbytes) in enumerate(
        ((CopyKind.HTOD, 1 << 20), (CopyKind.HTOD, 64 * 1024), (CopyKind.HTOD, 64 * 1024 + 1), (CopyKind.DTOH, 4))
    ):
        a = s.launch(th, i * 100 * US, 5 * US, "cudaMemcpy")
        s.copy(st2, i * 100 * US + 10 * US, 5 * US, direction=direction, nbytes=nbytes, launch=a)
    flags = _flags_of(s)
    assert [flags[i * 100 * US + 10 * US] for i in range(4)] == [("sync_copy",), (), ("sync_copy",), ("sync_copy",)]


def test_async_field_from_the_profiler_wins_over_the_api_name() -> None:
    s = Synth()
    st2 = s.stream(2)
    s.copy(st2, 0, 5 * US, src=MemKind.PAGEABLE, is_async=1)  # nsys stores the flag; no launch needed
    s.copy(st2, 10 * US, 5 * US, nbytes=1 << 20, is_async=0)
    flags = _flags_of(s)
    assert flags == {0: ("pageable_async",), 10 * US: ("sync_copy",)}


def test_copy_between_kernels_of_its_stream_is_flagged_not_at_the_edges_or_device_to_device() -> None:
    s = Synth()
    st7 = s.stream(7)
    s.copy(st7, 0, 5 * US)  # before the first kernel of the stream
    s.kernel(st7, 10 * US, 10 * US)
    s.copy(st7, 30 * US, 5 * US)  # between kernels
    s.copy(st7, 40 * US, 5 * US, direction=CopyKind.DTOD, src=MemKind.DEVICE, dst=MemKind.DEVICE)
    s.copy(st7, 50 * US, 1 * US, memset=True)
    s.kernel(st7, 60 * US, 10 * US)
    s.copy(st7, 80 * US, 5 * US, direction=CopyKind.DTOH, src=MemKind.DEVICE, dst=MemKind.PINNED)  # after the last
    flags = _flags_of(s)
    assert flags[30 * US] == ("copy_on_compute_stream",)
    assert flags[0] == flags[40 * US] == flags[50 * US] == flags[80 * US] == ()


def test_sync_memset_on_pinned_or_managed_memory_is_flagged() -> None:
    s = Synth()
    th, st2 = s.thread(), s.stream(2)
    for i, (api, mem) in enumerate(
        (
            ("cudaMemset", MemKind.PINNED),
            ("cudaMemset", MemKind.MANAGED),
            ("cudaMemset", MemKind.DEVICE),
            ("cudaMemsetAsync", MemKind.PINNED),
        )
    ):
        a = s.launch(th, i * 100 * US, 5 * US, api)
        s.copy(st2, i * 100 * US + 10 * US, 5 * US, memset=True, dst=mem, launch=a)
    flags = _flags_of(s)
    assert [flags[i * 100 * US + 10 * US] for i in range(4)] == [("sync_memset",), ("sync_memset",), (), ()]


def test_flag_objects_list_their_rows_most_exposed_first_with_a_fix() -> None:
    s = Synth()
    th, st2 = s.thread(), s.stream(2)
    for i, dur in enumerate((5 * US, 50 * US, 20 * US)):
        a = s.launch(th, i * 100 * US, 2 * US, "cudaMemcpyAsync")
        s.copy(st2, i * 100 * US + 5 * US, dur, src=MemKind.PAGEABLE, launch=a)
    (flag,) = transfer_overlap(s.build()).flags
    assert flag.flag == "pageable_async" and flag.count == 3
    assert [r.dur_ns for r in flag.rows] == [50 * US, 20 * US, 5 * US]
    assert flag.exposed_ns == 75 * US and "pin" in flag.fix.lower()


def test_unified_memory_migrations_are_listed_apart_and_never_exposed() -> None:
    s = Synth()
    st2 = s.stream(2)
    s.copy(st2, 0, 50 * US, direction=CopyKind.UVM_HTOD, uvm=True)
    s.copy(st2, 100 * US, 10 * US)
    rep = transfer_overlap(s.build())
    assert len(rep.copies) == 1 and len(rep.uvm) == 1
    assert rep.uvm[0].direction == "UVM" and rep.uvm[0].exposed_ns == 0
    assert rep.exposed_ns == 10 * US


def test_filters_and_empty_trace() -> None:
    s = Synth()
    s.copy(s.stream(2, device=0), 0, 10 * US)
    s.copy(s.stream(2, device=1), 0, 20 * US)
    t = s.build()
    assert [d.device for d in transfer_overlap(t, device=1).devices] == [1]
    assert transfer_overlap(t, rank=5).copies == []
    e = Synth()
    e.kernel(e.stream(), 0, 5)
    rep = transfer_overlap(e.build())
    assert rep.copies == [] and rep.flags == [] and rep.by_direction == [] and rep.exposed_ns == 0
