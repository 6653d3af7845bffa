"""Annotation ranges: CPU totals, nesting depth per thread, and the GPU time projected onto each range."""

from __future__ import annotations

from typing import Any

import pytest

from gputop_trace.analysis.ranges import RangeRow, range_summary
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import Kind
from tests.conftest import corpus_file
from tests.synthetic import Synth

US = 1_000


def _rows(s: Synth, **kw: Any) -> dict[str, RangeRow]:
    return {r.name: r for r in range_summary(s.build(), **kw)}


def test_gpu_time_is_the_union_of_ops_launched_inside_the_range_on_the_same_thread() -> None:
    s = Synth()
    th, other = s.thread(1), s.thread(2)
    a, b = s.stream(7), s.stream(9)
    s.ev(th, Kind.RANGE, "encoder_layer_3", 0, 100 * US)
    l1 = s.launch(th, 10 * US, 2 * US)
    s.kernel(a, 20 * US, 50 * US, launch=l1)  # [20, 70)
    l2 = s.launch(th, 20 * US, 2 * US)
    s.kernel(b, 40 * US, 50 * US, launch=l2)  # [40, 90): concurrent with the first, counted once
    l3 = s.launch(th, 150 * US, 2 * US)  # launched after the range: not its GPU time
    s.kernel(a, 160 * US, 10 * US, launch=l3)
    l4 = s.launch(other, 30 * US, 2 * US)  # inside the range's time but on another thread
    s.kernel(a, 200 * US, 10 * US, launch=l4)
    r = _rows(s)["encoder_layer_3"]
    assert (r.count, r.total_ns, r.gpu_ops) == (1, 100 * US, 2)
    assert r.gpu_ns == 70 * US and r.gpu_span_ns == 70 * US
    assert r.gpu_annotation_ns is None


def test_nested_ranges_each_get_the_gpu_time_of_their_launches_and_a_depth() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    s.ev(th, Kind.RANGE, "forward", 0, 100 * US)
    s.ev(th, Kind.RANGE, "layer_0", 10 * US, 40 * US)
    s.ev(th, Kind.RANGE, "attn", 12 * US, 10 * US)
    s.ev(th, Kind.CPU_OP, "aten::mm", 13 * US, 5 * US)  # operators do not count in the range depth
    la = s.launch(th, 14 * US, 1 * US)
    s.kernel(st7, 30 * US, 20 * US, launch=la)
    s.ev(th, Kind.RANGE, "layer_1", 60 * US, 30 * US)
    lb = s.launch(th, 65 * US, 1 * US)
    s.kernel(st7, 70 * US, 5 * US, launch=lb)
    rows = _rows(s)
    assert {n: r.max_depth for n, r in rows.items()} == {"forward": 0, "layer_0": 1, "attn": 2, "layer_1": 1}
    assert {n: r.gpu_ns for n, r in rows.items()} == {
        "forward": 25 * US,
        "layer_0": 20 * US,
        "attn": 20 * US,
        "layer_1": 5 * US,
    }


def test_instances_aggregate_and_zero_length_ranges_count() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    for i, dur in enumerate((10 * US, 30 * US, 0)):
        s.ev(th, Kind.RANGE, "step", i * 100 * US, dur)
    la = s.launch(th, 105 * US, 1 * US)
    s.kernel(st7, 110 * US, 7 * US, launch=la)
    r = _rows(s)["step"]
    assert (r.count, r.total_ns, r.min_ns, r.max_ns, r.gpu_ns) == (3, 40 * US, 0, 30 * US, 7 * US)
    assert r.mean_ns == pytest.approx(40 * US / 3)
    assert len(r.events) == 3


def test_filters_rank_device_and_name() -> None:
    s = Synth()
    th0, th1 = s.thread(1, rank=0), s.thread(1, rank=1)
    g0, g1 = s.stream(7, device=0, rank=0), s.stream(7, device=1, rank=1)
    for th, g in ((th0, g0), (th1, g1)):
        s.ev(th, Kind.RANGE, "Train Step", 0, 100 * US)
        s.ev(th, Kind.RANGE, "eval", 200 * US, 10 * US)
        la = s.launch(th, 5 * US, 1 * US)
        s.kernel(g, 10 * US, 10 * US, launch=la)
    t = s.build()
    rows = {r.name: r for r in range_summary(t)}
    assert rows["Train Step"].count == 2 and rows["Train Step"].threads == 2
    assert [r.count for r in range_summary(t, rank=1)] == [1, 1]
    assert range_summary(t, device=1)[0].gpu_ns == 10 * US
    assert [r.name for r in range_summary(t, name_filter="train")] == ["Train Step"]


def test_no_ranges() -> None:
    s = Synth()
    s.kernel(s.stream(), 0, 10)
    assert range_summary(s.build()) == []


@pytest.mark.corpus
def test_kineto_projection_matches_the_gpu_user_annotation_bands() -> None:
    t = load_paths([corpus_file("kineto/h200_gpt_train_small.json.gz")])
    rows = {r.name: r for r in range_summary(t)}
    assert {"step_0", "data_load", "forward", "layer_0", "backward", "optimizer", "log_loss", "checkpoint_d2h"} <= set(
        rows
    )
    for name in ("forward", "layer_0", "layer_1", "log_loss", "checkpoint_d2h", "Optimizer.step#AdamW.step"):
        r = rows[name]
        # Kineto's gpu_user_annotation spans first to last GPU op of the range (per stream), ±µs rounding
        assert r.gpu_annotation_ns is not None and abs(r.gpu_span_ns - r.gpu_annotation_ns) <= 2 * r.count, name
    # data_load's two copies run on two streams: Kineto draws one band per stream, their union is the busy time
    assert abs(rows["data_load"].gpu_ns - (rows["data_load"].gpu_annotation_ns or 0)) <= 20
    assert rows["checkpoint_d2h"].gpu_ns == 23_992_976
    assert rows["layer_0"].max_depth == 2 and rows["step_0"].max_depth == 0


@pytest.mark.corpus
def test_jax_trace_annotations_project_their_gpu_time() -> None:
    t = load_paths([corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")])
    rows = {r.name: r for r in range_summary(t)}
    steps = [rows[f"train_step_{i}"] for i in range(5)]
    assert all(r.count == 1 for r in steps)
    assert all(r.gpu_ops > 0 and r.gpu_ns > 0 for r in steps)


def test_nvtx_domains_are_split_off_and_emit_nvtx_operator_ids_merged() -> None:
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.RANGE, "MPI:MPI_Send", 0, 10 * US)
    s.ev(th, Kind.RANGE, "MPI:MPI_Send", 20 * US, 10 * US)
    s.ev(th, Kind.RANGE, "aten::mm, seq = 3, op_id = 17", 40 * US, 10 * US)
    s.ev(th, Kind.RANGE, "aten::mm, seq = 4, op_id = 21", 60 * US, 5 * US)
    s.ev(th, Kind.RANGE, "Other:thing", 70 * US, 1 * US)  # not a recorded domain: the name stays whole
    t = s.build()
    t = t.with_meta(properties={**t.meta.properties, "nvtx_domains": ["MPI"]})
    rows = {(r.domain, r.name): r for r in range_summary(t)}
    assert set(rows) == {("MPI", "MPI_Send"), ("", "aten::mm"), ("", "Other:thing")}
    assert rows[("MPI", "MPI_Send")].count == 2 and rows[("", "aten::mm")].total_ns == 15 * US
    exact = {r.name for r in range_summary(t, merge_operator_ids=False)}
    assert "aten::mm, seq = 3, op_id = 17" in exact


def test_autograd_thread_launches_count_for_the_forward_threads_ranges() -> None:
    """A `backward` range on the main thread and the kernels PyTorch's autograd thread launches meanwhile, tied
    by a fwdbwd flow (stored either way round: the earlier end is the forward operator)."""
    from gputop_trace.analysis.autograd import VIA_FLOWS, autograd_threads
    from gputop_trace.model.kinds import FlowKind

    us = 1_000
    s = Synth()
    main, autograd, st = s.thread(tid=1), s.thread(tid=2), s.stream()
    fwd_op = s.ev(main, Kind.CPU_OP, "aten::mm", 10 * us, 5 * us)
    s.ev(main, Kind.RANGE, "backward", 100 * us, 100 * us)
    bwd_op = s.ev(autograd, Kind.CPU_OP, "autograd::engine::evaluate_function: MmBackward0", 110 * us, 50 * us)
    for t in (120, 140):
        la = s.launch(autograd, t * us, 2 * us)
        s.kernel(st, (t + 5) * us, 10 * us, launch=la)
    s.b.add_flows([bwd_op], [fwd_op], FlowKind.FWDBWD)  # stored end first, as the GPT trace's arrows are
    trace = s.build()
    (th,) = autograd_threads(trace).values()
    assert (trace.lanes[th.lane].name, trace.lanes[th.owner].name, th.via) == (
        trace.lanes[autograd].name,
        trace.lanes[main].name,
        VIA_FLOWS,
    )
    (row,) = [r for r in range_summary(trace) if r.name == "backward"]
    assert row.gpu_ops == 2 and row.gpu_ops_autograd == 2 and row.gpu_ns == 20 * us
