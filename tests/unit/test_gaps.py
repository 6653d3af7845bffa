"""GPU idle gaps on small synthetic traces: busy union, nsys-style holes, threshold edges, attribution."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputop_trace.analysis.gaps.causes import CAUSES
from gputop_trace.analysis.gaps.detect import HISTOGRAM_EDGES_NS, Gap, find_gaps
from gputop_trace.analysis.intervals import holes, union
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.tables import Lane
from tests.paths import ROOT
from tests.synthetic import Synth

US = 1_000
MS = 1_000_000


def _two_kernels(gap: int) -> Synth:
    s = Synth()
    st7 = s.stream(7)
    s.kernel(st7, 0, 10 * US)
    s.kernel(st7, 10 * US + gap, 10 * US)
    return s


# ---- busy time and holes ---------------------------------------------------------------------------------
def test_overlapping_and_nested_ops_on_several_streams_make_one_busy_union() -> None:
    s = Synth()
    a, b = s.stream(7), s.stream(13)
    s.kernel(a, 0, 100 * US)  # [0, 100)
    s.kernel(b, 20 * US, 30 * US)  # nested in the first
    s.kernel(b, 90 * US, 40 * US)  # overlaps its end: busy until 130
    s.copy(a, 200 * US, 50 * US)  # a copy counts as busy
    s.kernel(b, 300 * US, 10 * US)
    (d,) = find_gaps(s.build(), 1)
    assert (d.first_ns, d.last_ns, d.span_ns) == (0, 310 * US, 310 * US)
    assert d.busy_ns == 130 * US + 50 * US + 10 * US
    assert d.idle_ns == d.span_ns - d.busy_ns
    assert [(g.start_ns, g.dur_ns) for g in d.gaps] == [(130 * US, 70 * US), (250 * US, 50 * US)]


def test_gap_exactly_at_the_threshold_is_reported_and_one_ns_shorter_is_not() -> None:
    (d,) = find_gaps(_two_kernels(20 * US).build(), 20 * US)
    assert [g.dur_ns for g in d.gaps] == [20 * US]
    (d,) = find_gaps(_two_kernels(20 * US - 1).build(), 20 * US)
    assert d.gaps == []
    assert d.idle_ns == 20 * US - 1  # idle time counts every hole, whatever the threshold


def test_single_op_has_no_gaps_and_no_idle_time() -> None:
    s = Synth()
    s.kernel(s.stream(), 5 * US, 7 * US)
    (d,) = find_gaps(s.build(), 0)
    assert (d.span_ns, d.busy_ns, d.idle_ns, d.holes, d.gaps) == (7 * US, 7 * US, 0, 0, [])
    assert d.idle_pct == 0.0


def test_no_gpu_ops_gives_no_devices() -> None:
    s = Synth()
    s.ev(s.thread(), Kind.CPU_OP, "aten::mm", 0, 10 * US)
    assert find_gaps(s.build()) == []


def test_zero_length_op_splits_a_hole_like_nsys_and_adds_no_busy_time() -> None:
    s = Synth()
    st7 = s.stream()
    s.kernel(st7, 0, 10 * US)
    s.kernel(st7, 40 * US, 0)  # an instant of GPU work in the middle of the hole
    s.kernel(st7, 100 * US, 10 * US)
    (d,) = find_gaps(s.build(), 1)
    assert [(g.start_ns, g.dur_ns) for g in d.gaps] == [(10 * US, 30 * US), (40 * US, 60 * US)]
    assert d.busy_ns == 20 * US and d.idle_ns == 90 * US


def test_touching_ops_leave_no_hole() -> None:
    s = Synth()
    st7 = s.stream()
    s.kernel(st7, 0, 10 * US)
    s.kernel(st7, 10 * US, 10 * US)
    (d,) = find_gaps(s.build(), 0)
    assert d.holes == 0 and d.idle_ns == 0


def test_devices_are_separate_and_filters_apply() -> None:
    s = Synth()
    g0, g1 = s.stream(7, device=0), s.stream(7, device=1)
    s.kernel(g0, 0, 10 * US)
    s.kernel(g0, 50 * US, 10 * US)
    s.kernel(g1, 20 * US, 10 * US)  # fills device 0's hole only on device 1
    t = s.build()
    res = find_gaps(t, 1)
    assert [(d.device, len(d.gaps)) for d in res] == [(0, 1), (1, 0)]
    assert [d.device for d in find_gaps(t, 1, device=1)] == [1]
    assert find_gaps(t, 1, rank=3) == []


def test_profiler_overhead_inside_the_span_is_busy_and_outside_is_ignored() -> None:
    s = Synth()
    st7 = s.stream()
    ovh = s.lane(
        "ovh", Lane(kind=LaneKind.OTHER, name="CUDA profiling overhead", pid=1, device=0)
    )  # nsys PROFILER_OVERHEAD rows live on a lane with the device set
    s.kernel(st7, 100 * US, 10 * US)
    s.kernel(st7, 200 * US, 10 * US)
    s.ev(ovh, Kind.OVERHEAD, "CUDA profiling data flush overhead", 130 * US, 40 * US)  # inside the hole
    s.ev(ovh, Kind.OVERHEAD, "CUDA profiling data flush overhead", 0, 50 * US)  # before the first op
    (d,) = find_gaps(s.build(), 1)
    assert d.first_ns == 100 * US and d.span_ns == 110 * US
    assert [(g.start_ns, g.dur_ns) for g in d.gaps] == [(110 * US, 20 * US), (170 * US, 30 * US)]
    assert d.ops == 2


def test_histogram_covers_every_hole_and_cause_totals_cover_every_reported_gap() -> None:
    s = Synth()
    st7 = s.stream()
    t0 = 0
    for gap in (500, 5 * US, 15 * US, 30 * US, 70 * US, 300 * US, 2 * MS, 20 * MS, 200 * MS):
        s.kernel(st7, t0, 1 * US)
        t0 += 1 * US + gap
    s.kernel(st7, t0, 1 * US)
    (d,) = find_gaps(s.build(), 20 * US)
    assert d.histogram.edges_ns == HISTOGRAM_EDGES_NS
    assert d.histogram.counts == (1, 1, 1, 1, 1, 1, 1, 1, 1)
    assert sum(d.histogram.total_ns) == d.idle_ns
    assert sum(c.count for c in d.by_cause.values()) == len(d.gaps) == 6
    assert sum(c.total_ns for c in d.by_cause.values()) == d.gaps_ns
    assert set(d.by_cause) == set(CAUSES)


def test_launch_bound_when_many_tiny_gaps_sit_between_tiny_kernels() -> None:
    def build(gap: int) -> Synth:
        s = Synth()
        st7 = s.stream()
        for i in range(80):
            s.kernel(st7, i * (3 * US + gap), 3 * US)
        return s

    (tight,) = find_gaps(build(5 * US).build())
    assert tight.launch_bound and tight.short_gaps == 79
    (loose,) = find_gaps(build(50 * US).build())
    assert not loose.launch_bound and loose.short_gaps == 0


# ---- attribution -----------------------------------------------------------------------------------------
def _gap_with_host(*host: tuple[Kind, str, int, int], launch_at: int = 900 * US, launch_dur: int = 5 * US) -> Synth:
    """Kernel A [0,100us), host events on thread 1, kernel B launched at ``launch_at`` starting at 1 ms."""
    s = Synth()
    th, st7 = s.thread(), s.stream()
    a = s.launch(th, 0, 2 * US)
    s.kernel(st7, 0, 100 * US, "A", launch=a)
    for kind, name, start, dur in host:
        s.ev(th, kind, name, start, dur)
    b = s.launch(th, launch_at, launch_dur)
    s.kernel(st7, 1 * MS, 10 * US, "B", launch=b)
    return s


def _only_gap(s: Synth) -> Gap:
    (d,) = find_gaps(s.build())
    (g,) = d.gaps
    return g


def test_data_loading_range_names_the_cause_and_the_range() -> None:
    t = _gap_with_host((Kind.RANGE, "data_load", 100 * US, 790 * US)).build()
    (d,) = find_gaps(t)
    (g,) = d.gaps
    assert g.cause == "data_loading"
    assert t.event_name(g.cause_event) == "data_load"
    assert g.breakdown_ns["data"] == 790 * US
    assert g.window_ns == 805 * US  # gap start to the end of the launch call
    assert "data_load" in g.detail


def test_dataloader_name_variants_count_as_data_loading_but_dataparallel_does_not() -> None:
    for name, cause in (
        ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "data_loading"),
        ("load_batch", "data_loading"),
        ("DistributedDataParallel.forward", "cpu_bound"),
    ):
        s = _gap_with_host(
            (Kind.RANGE, "step_0", 0, 2 * MS),
            (Kind.RANGE, name, 100 * US, 790 * US),
            (Kind.CPU_OP, "aten::empty", 100 * US, 10 * US),
        )
        assert _only_gap(s).cause == cause, name


def test_blocked_in_an_os_call() -> None:
    g = _only_gap(_gap_with_host((Kind.OSRT, "pthread_cond_wait", 120 * US, 700 * US)))
    assert g.cause == "blocked_os"
    assert "pthread_cond_wait" in g.detail


def test_python_sleep_is_an_os_block() -> None:
    g = _only_gap(_gap_with_host((Kind.PYTHON, "time.sleep", 120 * US, 700 * US)))
    assert g.cause == "blocked_os"


def test_cpu_operators_make_it_cpu_bound() -> None:
    g = _only_gap(_gap_with_host((Kind.CPU_OP, "aten::index", 110 * US, 600 * US)))
    assert g.cause == "cpu_bound"
    assert g.after_sync == -1


def test_nothing_traced_is_untraced_even_inside_an_outer_step_range() -> None:
    # an outermost range with events nested in it is a label, not work
    s = _gap_with_host((Kind.RANGE, "step_3", 0, 2 * MS), launch_at=900 * US)
    g = _only_gap(s)
    assert g.cause == "untraced"
    assert g.range_name == "step_3"


def test_sync_at_the_gap_start_then_host_work_is_a_sync_stall() -> None:
    s = _gap_with_host(
        (Kind.CPU_OP, "aten::item", 50 * US, 52 * US),
        (Kind.API, "cudaStreamSynchronize", 55 * US, 46 * US),  # returns 1 µs after the GPU went idle
        (Kind.CPU_OP, "aten::add", 110 * US, 700 * US),
    )
    t = s.build()
    (d,) = find_gaps(t)
    (g,) = d.gaps
    assert g.cause == "sync_stall"
    assert t.event_name(g.after_sync) in ("aten::item", "cudaStreamSynchronize")
    assert g.cause_event == g.after_sync


def test_sync_that_dominates_the_gap_is_a_sync_stall() -> None:
    g = _only_gap(_gap_with_host((Kind.API, "cudaDeviceSynchronize", 150 * US, 700 * US)))
    assert g.cause == "sync_stall"


def test_sync_followed_by_data_loading_is_data_loading() -> None:
    g = _only_gap(
        _gap_with_host(
            (Kind.API, "cudaStreamSynchronize", 60 * US, 41 * US), (Kind.RANGE, "data_load", 110 * US, 780 * US)
        )
    )
    assert g.cause == "data_loading"
    assert g.after_sync >= 0


def test_op_queued_before_the_gap_is_a_gpu_side_dependency() -> None:
    s = Synth()
    th, st7, st9 = s.thread(), s.stream(7), s.stream(9)
    a = s.launch(th, 0, 2 * US)
    s.kernel(st7, 0, 100 * US, "A", launch=a)
    b = s.launch(th, 10 * US, 3 * US)  # returned long before the GPU went idle
    s.kernel(st9, 500 * US, 10 * US, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", launch=b)
    s.ev(th, Kind.CPU_OP, "aten::busy", 100 * US, 400 * US)
    (d,) = find_gaps(s.build())
    (g,) = d.gaps
    assert g.cause == "gpu_dependency"
    assert "collective" in g.detail
    assert sum(g.breakdown_ns.values()) == 0 and g.window_ns == 0


def test_launch_call_still_running_when_the_gpu_went_idle_is_host_side() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream(7)
    a = s.launch(th, 0, 2 * US)
    s.kernel(st7, 0, 100 * US, "A", launch=a)
    b = s.launch(th, 50 * US, 400 * US, "cudaLaunchKernel")  # slow launch (lazy module loading)
    s.kernel(st7, 460 * US, 10 * US, "B", launch=b)
    (d,) = find_gaps(s.build())
    (g,) = d.gaps
    assert g.cause == "cpu_bound"
    assert g.breakdown_ns["cpu"] == 350 * US


def test_op_without_launch_uses_the_main_launching_thread() -> None:
    s = Synth()
    main, other, st7 = s.thread(1), s.thread(2), s.stream()
    for i in range(3):
        la = s.launch(main, i * 10 * US, 2 * US)
        s.kernel(st7, i * 10 * US + 3 * US, 5 * US, launch=la)
    s.ev(main, Kind.RANGE, "DataLoader", 40 * US, 500 * US)
    s.ev(other, Kind.CPU_OP, "aten::noise", 40 * US, 500 * US)
    s.copy(st7, 600 * US, 5 * US)  # no launch known (as for some JAX copies)
    (d,) = find_gaps(s.build())
    g = d.longest(1)[0]
    assert g.launch_event == -1
    assert g.cause == "data_loading"


def test_no_cpu_thread_at_all_is_untraced() -> None:
    t = _two_kernels(100 * US).build()
    (d,) = find_gaps(t)
    (g,) = d.gaps
    assert g.cause == "untraced" and g.thread_lane == -1


def test_negative_threshold_is_refused() -> None:
    with pytest.raises(ValueError):
        find_gaps(_two_kernels(5).build(), -1)


# ---- properties ------------------------------------------------------------------------------------------
intervals = st.lists(st.tuples(st.integers(0, 2_000), st.integers(0, 300), st.integers(0, 2)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(intervals)
def test_holes_match_a_brute_force_timeline_and_idle_is_span_minus_union(ops: list[tuple[int, int, int]]) -> None:
    s = Synth()
    lanes = [s.stream(7 + i) for i in range(3)]
    for start, dur, ln in ops:
        s.kernel(lanes[ln], start, dur)
    (d,) = find_gaps(s.build(), 0)
    starts = np.array([o[0] for o in ops])
    ends = starts + np.array([o[1] for o in ops])
    us, ue = union(starts, ends)
    assert d.span_ns == ends.max() - starts.min()
    assert d.idle_ns == d.span_ns - int((ue - us).sum())
    # every reported gap is a stretch where no op runs, bounded by op edges
    for g in d.gaps:
        assert not np.any((starts < g.end_ns) & (ends > g.start_ns) & (ends > starts))
        assert g.start_ns in set(ends.tolist()) and g.end_ns in set(starts.tolist())
    hs, he, _, _ = holes(starts, ends)
    assert int((he - hs).sum()) == d.idle_ns


def test_per_stream_idle_breakdown_host_wait_kernel_wait_other() -> None:
    from gputop_trace.analysis.stream_idle import stream_idle_breakdown

    s = Synth()
    th, st7 = s.thread(), s.stream(7)
    a = s.launch(th, 0, 2 * US)
    s.kernel(st7, 5 * US, 10 * US, launch=a)  # ends at 15
    b = s.launch(th, 1 * US, 2 * US)  # queued long before: 10 µs gap of launch latency
    s.kernel(st7, 25 * US, 10 * US, launch=b)  # ends at 35
    c = s.launch(th, 100 * US, 2 * US)  # launched after the stream went idle: host wait
    s.kernel(st7, 110 * US, 10 * US, launch=c)  # ends at 120
    d = s.launch(th, 3 * US, 2 * US)  # queued early, 80 µs gap: waited on something else
    s.kernel(st7, 200 * US, 10 * US, launch=d)
    (row,) = stream_idle_breakdown(s.build())
    assert (row.stream, row.ops, row.idle_ns) == (7, 4, 10 * US + 75 * US + 80 * US)
    assert (row.kernel_wait_ns, row.host_wait_ns, row.other_ns) == (10 * US, 75 * US, 80 * US)


def test_per_stream_idle_differs_from_hta_as_documented() -> None:
    """docs/analyses.md, "How this differs from HTA's get_idle_time_breakdown": a short gap before an op without a
    launch record is *other* here (HTA: kernel_wait); an op nested in a longer one opens no gap (HTA compares with
    the op just before); an overlap does not subtract from the idle total (HTA sums the negative interval)."""
    from gputop_trace.analysis.stream_idle import stream_idle_breakdown

    s = Synth()
    st7 = s.stream(7)
    s.kernel(st7, 0, 100 * US)  # [0, 100)
    s.kernel(st7, 10 * US, 20 * US)  # nested: [10, 30) — HTA: -90 µs against the one before
    s.kernel(st7, 110 * US, 10 * US)  # no launch record, 10 µs after the latest end: other (HTA: kernel_wait)
    (row,) = stream_idle_breakdown(s.build())
    assert (row.idle_ns, row.kernel_wait_ns, row.host_wait_ns, row.other_ns) == (10 * US, 0, 0, 10 * US)
    text = (ROOT / "docs" / "analyses.md").read_text()
    assert "How this differs from HTA's `get_idle_time_breakdown`" in text and "Ops without a launch record" in text


def test_analyses_md_says_what_summary_says_on_each_external_trace() -> None:
    text = (ROOT / "docs" / "analyses.md").read_text()
    i = text.index("## What `summary` says on the external traces")
    section = text[i : text.index("\n## ", i + 3)]
    for name in ("trace_filter", "trace_compare", "negative_queue_length_values_check", "call_stack", "cpu_only",
                 "execution_trace"):  # fmt: skip
        assert f"**`{name}" in section, name
