"""Critical path (issue 30): one synthetic trace per edge kind with its exact expected path, and a what-if whose
saving is known. Times in ns."""

from __future__ import annotations

import dataclasses

import pytest

from gputop_trace.analysis.critical_path.path import PathSegment, StepPath, critical_paths, replay_matches
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from tests.synthetic import Synth

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _path(trace: Trace, rank: int = 0) -> StepPath:
    assert replay_matches(trace)
    (p,) = critical_paths(trace, rank=rank)
    assert sum(s.dur_ns for s in p.segments) == p.length_ns == sum(p.breakdown.values())
    assert sum(ns for _, _, ns in p.by_item) == p.length_ns
    assert p.length_ns <= p.dur_ns
    return p


def _segs(p: StepPath) -> list[tuple[str, str, int, int]]:
    return [(s.category, s.label, s.start_ns, s.dur_ns) for s in p.segments]


def test_nesting_splits_an_operator_into_its_self_time_and_idle_gaps_are_idle() -> None:
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 150)
    s.ev(th, Kind.CPU_OP, "aten::outer", 0, 100)
    s.ev(th, Kind.CPU_OP, "aten::inner", 20, 40)
    s.ev(th, Kind.CPU_OP, "aten::after", 120, 30)
    p = _path(s.build())
    assert (p.step_name, p.start_ns, p.dur_ns, p.length_ns) == ("ProfilerStep#0", 0, 150, 150)
    assert _segs(p) == [
        ("cpu_op", "aten::outer", 0, 20),
        ("cpu_op", "aten::inner", 20, 40),
        ("cpu_op", "aten::outer", 60, 40),
        ("idle", "idle: CPU", 100, 20),
        ("cpu_op", "aten::after", 120, 30),
    ]
    assert p.by_item[0] == ("cpu_op", "aten::outer", 60)


def test_an_event_that_outlives_the_one_it_began_in_owns_its_own_time_and_nothing_after_it() -> None:
    """Overlap without nesting (a profiler range that ends after the operator it began in, as on the MTIA trace):
    the time after the outer operator ends belongs to the inner event still open, and the gap after both ended is
    idle, not the outer operator's host time."""
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 150)
    s.ev(th, Kind.CPU_OP, "aten::outer", 0, 100)
    s.ev(th, Kind.CPU_OP, "aten::inner", 80, 40)
    s.ev(th, Kind.CPU_OP, "aten::after", 130, 20)
    p = _path(s.build())
    assert _segs(p) == [
        ("cpu_op", "aten::outer", 0, 80),
        ("cpu_op", "aten::inner", 80, 40),
        ("idle", "idle: CPU", 120, 10),
        ("cpu_op", "aten::after", 130, 20),
    ]


def test_launch_edge_takes_the_path_from_the_launch_call_to_its_kernel() -> None:
    s = Synth()
    th, st = s.thread(), s.stream()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 120)
    s.ev(th, Kind.CPU_OP, "aten::mm", 0, 12)
    la = s.launch(th, 2, 8)
    s.kernel(st, 15, 100, "gemm", launch=la)
    p = _path(s.build())
    assert p.length_ns == 115
    assert _segs(p) == [
        ("cpu_op", "aten::mm", 0, 2),
        ("launch", "launch latency", 2, 13),
        ("kernel", "gemm", 15, 100),
    ]
    assert p.edges["launch"] == 1


def test_stream_order_chains_kernels_queued_behind_each_other() -> None:
    s = Synth()
    th, st = s.thread(), s.stream()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 160)
    a = s.launch(th, 0, 5)
    b = s.launch(th, 10, 5)
    s.kernel(st, 20, 50, "first", launch=a)
    s.kernel(st, 70, 80, "second", launch=b)
    p = _path(s.build())
    assert _segs(p) == [
        ("launch", "launch latency", 0, 20),
        ("kernel", "first", 20, 50),
        ("kernel", "second", 70, 80),
    ]


def test_event_wait_makes_the_path_cross_streams() -> None:
    s = Synth()
    th, sa, sb = s.thread(), s.stream(7), s.stream(13)
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 170)
    la = s.launch(th, 0, 5)
    s.launch(th, 6, 2, "cudaEventRecord")
    s.launch(th, 8, 2, "cudaStreamWaitEvent")
    lb = s.launch(th, 12, 4)
    s.kernel(sa, 10, 100, "producer", launch=la)
    s.kernel(sb, 115, 50, "consumer", launch=lb)
    p = _path(s.build())
    assert p.edges["event_wait"] == 1
    assert _segs(p) == [
        ("launch", "launch latency", 0, 10),
        ("kernel", "producer", 10, 100),
        ("idle", "idle: GPU", 110, 5),
        ("kernel", "consumer", 115, 50),
    ]
    assert len({s.lane for s in p.segments if s.category == "kernel"}) == 2


def test_sync_call_waits_for_the_gpu_and_the_host_resumes_after_it() -> None:
    s = Synth()
    th, st = s.thread(), s.stream()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 215)
    la = s.launch(th, 0, 5)
    s.kernel(st, 10, 190, "long", launch=la)
    s.launch(th, 6, 199, "cudaDeviceSynchronize")
    s.ev(th, Kind.CPU_OP, "aten::after", 205, 10)
    p = _path(s.build())
    assert p.edges["sync"] == 1
    assert _segs(p) == [
        ("launch", "launch latency", 0, 10),
        ("kernel", "long", 10, 190),
        ("sync_wait", "cudaDeviceSynchronize", 200, 5),
        ("cpu_op", "aten::after", 205, 10),
    ]


def test_collective_end_waits_for_the_last_rank_to_arrive() -> None:
    s = Synth()
    t0, s0 = s.thread(rank=0), s.stream(rank=0)
    t1, s1 = s.thread(pid=2, rank=1), s.stream(pid=2, rank=1)
    for th in (t0, t1):
        s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 310)
    s.ev(t0, Kind.CPU_OP, "aten::work", 0, 100)
    l0 = s.launch(t0, 100, 5)
    s.kernel(s0, 110, 190, NCCL, launch=l0)
    l1 = s.launch(t1, 0, 5)
    s.kernel(s1, 10, 290, NCCL, launch=l1)
    trace = s.build().with_meta(ranks=(0, 1), world_size=2)
    p = _path(trace, rank=1)
    assert p.edges["collective"] == 2  # each rank's kernel end waits for the other's start
    assert [(c, lab, st, d) for c, lab, st, d in _segs(p)] == [
        ("cpu_op", "aten::work", 0, 100),
        ("launch", "launch latency", 100, 10),
        ("collective", NCCL, 110, 190),
    ]
    assert [seg.rank for seg in p.segments] == [0, 0, 1]
    # rank 1 waited: making its own collective faster changes nothing, rank 0's work sets the time
    (w,) = [w for w in p.what_if if w.item == "aten::work"]
    assert (w.step_ns, w.if_2x_ns, w.if_gone_ns) == (300, 250, 200)


def test_collectives_are_not_joined_when_ranks_are_missing() -> None:
    s = Synth()
    t0, s0 = s.thread(rank=0), s.stream(rank=0)
    t1, s1 = s.thread(pid=2, rank=1), s.stream(pid=2, rank=1)
    l0 = s.launch(t0, 100, 5)
    s.kernel(s0, 110, 190, NCCL, launch=l0)
    l1 = s.launch(t1, 0, 5)
    s.kernel(s1, 10, 290, NCCL, launch=l1)
    trace = s.build().with_meta(ranks=(0, 1), world_size=8)
    (p,) = critical_paths(trace, rank=1)
    assert p.edges["collective"] == 0
    assert any("2 of the job's 8 ranks" in n for n in p.notes)
    assert p.step_name == "" and any("no step ranges" in n for n in p.notes)
    assert _segs(p) == [("launch", "launch latency", 0, 10), ("collective", NCCL, 10, 290)]


def test_what_if_replays_the_graph_with_a_known_saving() -> None:
    s = Synth()
    th, st = s.thread(), s.stream()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 175)
    a = s.launch(th, 0, 5)
    b = s.launch(th, 5, 5)
    s.kernel(st, 10, 100, "k1", launch=a)
    s.kernel(st, 110, 50, "k2", launch=b)
    s.launch(th, 10, 155, "cudaDeviceSynchronize")
    s.ev(th, Kind.CPU_OP, "aten::after", 165, 10)
    p = _path(s.build())
    assert p.length_ns == 175
    w = {x.item: x for x in p.what_if}
    # k1 2x faster: k2 and the sync move up by 50; gone: by 100
    assert (w["k1"].on_path_ns, w["k1"].if_2x_ns, w["k1"].if_gone_ns) == (100, 125, 75)
    assert (w["k2"].if_2x_ns, w["k2"].if_gone_ns) == (150, 125)
    # host work after the sync is on the path too: 2x faster saves half of it
    assert (w["aten::after"].if_2x_ns, w["aten::after"].if_gone_ns) == (170, 165)


def test_off_path_work_saves_nothing() -> None:
    s = Synth()
    th, st = s.thread(), s.stream()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 200)
    a = s.launch(th, 0, 5)
    s.kernel(st, 10, 190, "long", launch=a)
    s.ev(th, Kind.CPU_OP, "aten::side", 20, 30)  # the host works while the GPU runs
    p = _path(s.build())
    assert all(seg.label != "aten::side" for seg in p.segments)
    assert p.length_ns == 200


def test_no_work_gives_no_path() -> None:
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.MARKER, "mark", 0, 0)
    assert critical_paths(s.build()) == []


def test_segments_are_plain_path_segments() -> None:
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.CPU_OP, "aten::op", 0, 10)
    (p,) = critical_paths(s.build())
    (seg,) = p.segments
    assert seg == PathSegment(0, 10, "cpu_op", "aten::op", seg.event, seg.lane, 0)
    assert hash(seg) == hash(PathSegment(0, 10, "cpu_op", "aten::op", seg.event, seg.lane, 0))
    assert dataclasses.asdict(seg)["label"] == "aten::op"
    with pytest.raises(dataclasses.FrozenInstanceError):
        seg.dur_ns = 1  # type: ignore[misc]


def test_totals_without_segments_match_and_results_are_kept_with_the_trace() -> None:
    s = Synth()
    th, st = s.thread(), s.stream()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 120)
    la = s.launch(th, 0, 5)
    s.kernel(st, 15, 100, "gemm", launch=la)
    trace = s.build()
    (full,) = critical_paths(trace)
    (bare,) = critical_paths(trace, segments=False)
    assert bare.segments == () and full.segments
    assert (bare.length_ns, bare.breakdown, bare.by_item) == (full.length_ns, full.breakdown, full.by_item)
    assert critical_paths(trace)[0] is full  # asked again: the same result, not recomputed


def test_a_range_waiting_for_another_thread_joins_it_and_the_path_follows_that_thread() -> None:
    s = Synth()
    main, engine = s.thread(1), s.thread(2)
    s.ev(main, Kind.RANGE, "ProfilerStep#0", 0, 200)
    s.ev(main, Kind.RANGE, "## backward ##", 10, 140)  # the main thread waits in it
    s.ev(engine, Kind.CPU_OP, "MmBackward0", 20, 120)  # the autograd thread works
    s.ev(main, Kind.CPU_OP, "aten::after", 150, 10)
    p = _path(s.build())
    assert p.edges["wake"] >= 1 and p.edges["join"] == 1
    assert _segs(p) == [
        ("idle", "idle: CPU", 0, 10),
        ("idle", "idle: CPU", 10, 10),
        ("cpu_op", "MmBackward0", 20, 120),
        ("idle", "idle: CPU", 140, 10),
        ("cpu_op", "aten::after", 150, 10),
    ]
    assert [s.lane for s in p.segments] == [main, engine, engine, main, main]
    w = next(x for x in p.what_if if x.item == "MmBackward0")
    assert (w.step_ns, w.if_2x_ns, w.if_gone_ns) == (160, 100, 40)
    assert all(x.item != "## backward ##" for x in p.what_if)  # its time is the other thread's


def test_the_finding_is_about_the_slowest_step_and_its_best_2x_saving() -> None:
    """The summary's finding looks at the slowest step only (one graph built, not one per step) and names the item
    whose 2x speed-up shortens it most, by replay: here the longer operator of the longer step."""
    from gputop_trace.analysis.findings.critical_path import critical_path_findings

    s = Synth()
    th = s.thread()
    s.ev(th, Kind.RANGE, "ProfilerStep#0", 0, 100)
    s.ev(th, Kind.CPU_OP, "aten::short", 0, 100)
    s.ev(th, Kind.RANGE, "ProfilerStep#1", 100, 300)
    s.ev(th, Kind.CPU_OP, "aten::small", 100, 60)
    s.ev(th, Kind.CPU_OP, "aten::long", 160, 240)
    (f,) = critical_path_findings(s.build())
    assert f.title.startswith("ProfilerStep#1: 80.0% of its critical path is host work in `aten::long`")
    assert f.title.endswith("making it 2x faster saves 120 ns")
    assert (f.evidence["step"], f.evidence["if_2x_ns"], f.evidence["if_gone_ns"]) == (1, 180, 60)
