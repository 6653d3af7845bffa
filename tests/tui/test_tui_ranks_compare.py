"""The arithmetic of "ranks side by side" on hand-built ranks (``rank_traces.straggler_pair``): which steps are
matched across ranks, which lanes stand for a rank, in which cell each rank's all-reduce lands under either
alignment, where the first-arrival marker goes, and each rank's lateness and waiting in the step."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from gputop_trace.analysis.steps import find_steps
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.tui.view.rank_compare import (
    MAX_THREAD_ROWS,
    MIN_THREAD_ROWS,
    Align,
    LineKind,
    activity_text,
    compare_lines,
    compare_step,
    header_text,
    line_bounds,
    marker_col,
    rank_offsets,
    slot_at,
    slot_window,
    step_sentence,
    step_slots,
    thread_rows_for,
    title_text,
    view_extent,
    window_slot,
)
from gputop_trace.tui.view.ranks_view import NO_COLLECTIVES, ONE_RANK, RanksView, ranks_view
from gputop_trace.tui.view.row_render import Cells, event_row_cells, util_row_cells
from gputop_trace.tui.view.timeline_data import TimelineData, prepare_timeline
from gputop_trace.tui.view.timeline_math import Window
from tests.rank_traces import MS, US, straggler_pair
from tests.tui_helpers import synthetic_trace

#: 100 columns of 100 µs: column c covers [c * 100 µs, (c + 1) * 100 µs) from each rank's time 0
W = Window(0, 10 * MS, 100)


def _prepared(trace: Trace) -> tuple[TimelineData, RanksView]:
    data = prepare_timeline(trace)
    return data, ranks_view(trace, set(data.util))


@pytest.fixture(scope="module")
def pair() -> tuple[TimelineData, RanksView]:
    return _prepared(straggler_pair())


def _cells(data: TimelineData, view: RanksView, rank: int, kind: LineKind, align: Align, step: int = 0) -> Cells:
    slot = view.slots[step]
    offset = rank_offsets(slot, align)[rank]
    line = next(ln for ln in compare_lines(data.trace, view.lanes, slot) if ln.rank == rank and ln.kind == kind)
    if kind == LineKind.UTIL:
        return util_row_cells(data.util_row(rank, line.device), None, line_bounds(W, offset))
    return event_row_cells(data, data.row(line.lane, line.depth), line_bounds(W, offset))


def _first_drawn(cells: Cells) -> int:
    return next(i for i, ch in enumerate(cells.chars) if ch != " ")


# ---- steps across ranks ---------------------------------------------------------------------------------------------
def test_steps_are_matched_across_ranks_by_name(pair: tuple[TimelineData, RanksView]) -> None:
    _, view = pair
    assert [s.label for s in view.slots] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    second = view.slots[1]
    assert second.spans[0][:2] == (10 * MS, 19_500 * US)
    assert second.spans[1][:2] == (10_500 * US, 20 * MS)
    assert not second.window


def test_a_rank_missing_a_step_is_left_out_of_that_slot() -> None:
    trace = straggler_pair()
    steps = find_steps(trace)
    # rank 1's recording started one step later: its steps still meet rank 0's by name
    later = [steps[0]] + [
        replace(s, events=s.events[1:], start_ns=s.start_ns[1:], dur_ns=s.dur_ns[1:], range_dur_ns=s.range_dur_ns[1:])
        for s in steps[1:]
    ]
    slots = step_slots(trace, later)
    assert [s.label for s in slots] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert set(slots[0].spans) == {0} and slots[1].spans[1][0] == 10_500 * US


def test_steps_are_matched_by_position_when_names_differ() -> None:
    trace = straggler_pair(step_formats=("ProfilerStep#{k}", "iteration {k}"))
    slots = step_slots(trace, find_steps(trace))
    assert [s.label for s in slots] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]  # the lowest rank's
    assert [s.spans[1][0] for s in slots] == [500 * US, 10_500 * US, 20_500 * US]


def test_the_step_under_a_time(pair: tuple[TimelineData, RanksView]) -> None:
    _, view = pair
    slots = view.slots
    assert slot_at(slots, 0, 12 * MS) == 1
    assert slot_at(slots, 1, 10_200 * US) == 0  # rank 1's second step starts at 10.5 ms
    assert slot_at(slots, 0, 9_800 * US) == 0  # between steps: the one started last
    assert slot_at(slots, 7, 25 * MS) == 2  # an unknown rank is looked up on the lowest
    assert slot_at([], 0, 0) == -1


# ---- lanes and lines ------------------------------------------------------------------------------------------------
def test_each_rank_shows_its_busy_strip_nccl_stream_and_main_thread(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    t = data.trace
    for r in (0, 1):
        rl = view.lanes[r]
        assert rl.devices == (r,) and rl.has_collectives
        assert [t.lanes[i].name for i in rl.comm] == ["stream 20"]
        assert t.lanes[rl.thread].name == f"thread {100 + r} (python)" and rl.depths[0] == 0
    lines = compare_lines(t, view.lanes, view.slots[0])
    assert [(ln.kind, ln.label) for ln in lines if ln.rank == 1] == [
        (LineKind.HEADER, "rank 1"),
        (LineKind.UTIL, "GPU 1 busy"),
        (LineKind.EVENTS, "NCCL stream 20"),
        (LineKind.EVENTS, "thread 101"),
        (LineKind.EVENTS, "┊"),
    ]


def test_a_rank_without_the_step_gets_a_note(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    slot = view.slots[0]
    only0 = type(slot)(slot.label, {0: slot.spans[0]})
    lines = compare_lines(data.trace, view.lanes, only0)
    assert (LineKind.NOTE, "rank 1 did not record ProfilerStep#1") in [(ln.kind, ln.label) for ln in lines]


def test_main_thread_rows_follow_the_room() -> None:
    data, view = _prepared(straggler_pair())
    fixed = max(rl.fixed_lines for rl in view.lanes.values())
    assert fixed == 3  # header, busy strip, NCCL stream
    assert thread_rows_for(view.lanes, 10) == MIN_THREAD_ROWS
    assert thread_rows_for(view.lanes, 2 * (fixed + 4)) == 4
    assert thread_rows_for(view.lanes, 200) == MAX_THREAD_ROWS
    # the synthetic main threads have two rows: more room never invents rows
    lines = compare_lines(data.trace, view.lanes, view.slots[0], thread_rows=MAX_THREAD_ROWS)
    assert sum(1 for ln in lines if ln.kind == LineKind.EVENTS and ln.rank == 0) == 1 + 2


# ---- cells ----------------------------------------------------------------------------------------------------------
def test_on_step_starts_the_late_all_reduce_starts_further_right(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    r0 = _cells(data, view, 0, LineKind.EVENTS, Align.STEP)
    r1 = _cells(data, view, 1, LineKind.EVENTS, Align.STEP)
    # rank 0 arrives 6.0 ms into its step, rank 1 7.5 ms into its own (it started 0.5 ms later, arrived at 8.0)
    assert _first_drawn(r0) == 60 and r0.text[60:67] == "ncclDev"
    assert _first_drawn(r1) == 75 and r1.text[75:82] == "ncclDev"
    assert int(r0.events[60]) == int(r0.events[89]) != int(r0.events[91])  # waits until 9.0 ms: columns 60–89
    assert r1.chars[84] != " " and r1.chars[85] == " "  # rank 1's ends at 9.0 ms, 8.5 ms into its step


def test_on_the_common_clock_the_all_reduces_end_together(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    r0 = _cells(data, view, 0, LineKind.EVENTS, Align.CLOCK)
    r1 = _cells(data, view, 1, LineKind.EVENTS, Align.CLOCK)
    assert _first_drawn(r0) == 60 and _first_drawn(r1) == 80
    assert r0.chars[89] != " " and r0.chars[90] == " " and r1.chars[89] != " " and r1.chars[90] == " "
    # the main thread of rank 1 shifts by its 0.5 ms later step start: ProfilerStep#1 begins in column 5
    thread1 = _cells(data, view, 1, LineKind.EVENTS, Align.CLOCK)
    assert thread1.text.startswith(" " * 80)
    steps = next(
        ln for ln in compare_lines(data.trace, view.lanes, view.slots[0]) if ln.rank == 1 and ln.label == "thread 101"
    )
    row = event_row_cells(data, data.row(steps.lane, 0), line_bounds(W, rank_offsets(view.slots[0], Align.CLOCK)[1]))
    assert row.text.startswith("     ProfilerStep#1 9.50ms")


def test_busy_strips_are_aligned_too(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    u0 = _cells(data, view, 0, LineKind.UTIL, Align.STEP)
    u1 = _cells(data, view, 1, LineKind.UTIL, Align.STEP)
    # GEMM [0.6, 5.4) ms after rank 0's step start, [0.1, 4.9) ms after rank 1's
    assert _first_drawn(u0) == 6 and u0.chars[5] == " " and u0.chars[53] != " " and u0.chars[54] == " "
    assert _first_drawn(u1) == 1 and u1.chars[48] != " " and u1.chars[49] == " "


def test_the_first_arrival_marker_on_every_rank(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    slot = view.slots[0]
    cmp = compare_step(data, view.report, view.collectives, slot)
    step = rank_offsets(slot, Align.STEP)
    clock = rank_offsets(slot, Align.CLOCK)
    # rank 0 reached all-reduce 1 at 6.0 ms: that is 6.0 ms into rank 0's step and 5.5 ms into rank 1's
    assert marker_col(W, cmp.figures[0].marker_ns, step[0]) == 60
    assert marker_col(W, cmp.figures[1].marker_ns, step[1]) == 55
    assert marker_col(W, cmp.figures[1].marker_ns, clock[1]) == 60
    assert marker_col(Window(0, 5 * MS, 100), cmp.figures[1].marker_ns, step[1]) == -1  # off screen


def test_view_window_and_extent(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    slot = view.slots[1]
    step = rank_offsets(slot, Align.STEP)
    assert step == {0: 10 * MS, 1: 10_500 * US}
    assert rank_offsets(slot, Align.CLOCK) == {0: 10 * MS, 1: 10 * MS}
    assert slot_window(slot, step, margin=0.0) == (0, 9_500 * US)
    assert slot_window(slot, rank_offsets(slot, Align.CLOCK), margin=0.0) == (0, 10 * MS)
    lo, hi = view_extent(data.trace.span_ns, step)
    assert lo == -10_500 * US and hi == data.trace.span_ns - 10 * MS


# ---- the step's collectives -----------------------------------------------------------------------------------------
def test_lateness_waiting_and_host_activity_in_a_step(pair: tuple[TimelineData, RanksView]) -> None:
    data, view = pair
    cmp = compare_step(data, view.report, view.collectives, view.slots[1])
    f0, f1 = cmp.figures[0], cmp.figures[1]
    assert cmp.instances == 2 and f0.collectives == f1.collectives == 2
    assert (f1.late_ns, f1.late_at, f1.late_op, f1.times_last, f1.wait_ns) == (2 * MS, 1, "all_reduce", 2, 0)
    assert (f0.late_ns, f0.times_last, f0.wait_ns) == (0, 0, 2_100 * US)
    assert cmp.late_rank == 1 and cmp.first_rank == 0 and cmp.has_late_rank
    assert (cmp.spread_ns, cmp.worst_at, cmp.worst_of) == (2 * MS, 1, 2)
    assert cmp.activity == "ProfilerStep#<n> › aten::slow_op"
    assert header_text(cmp, 1, 9_500 * US) == (
        "rank 1 · ProfilerStep#2 9.50 ms · LATE 2.00 ms at all-reduce 1, last at 2 of 2 · "
        "starts 500 µs after rank 0 · host in ProfilerStep#<n> › aten::slow_op"
    )
    assert header_text(cmp, 0, 9_500 * US) == "rank 0 · ProfilerStep#2 9.50 ms · waited 2.10 ms in 2 all-reduces"
    assert step_sentence(cmp) == (
        "In ProfilerStep#2, rank 1 arrives 2.00 ms after rank 0 at all-reduce 1 of 2; while rank 0 waited for it, "
        "rank 1's host was in ProfilerStep#<n> › aten::slow_op. Rank 1 began this step 500 µs after rank 0. Inside "
        "this step's collectives rank 0 waits 2.10 ms."
    )


def test_collectives_belong_to_the_step_that_issued_them() -> None:
    """Rank 0's all-reduce 2 of a step is issued inside it but may run past its end: it still counts there."""
    data, view = _prepared(straggler_pair())
    counts = [compare_step(data, view.report, view.collectives, s).instances for s in view.slots]
    assert counts == [2, 2, 2]


def test_a_step_without_collectives_says_so() -> None:
    data, view = _prepared(straggler_pair(collectives=False))
    cmp = compare_step(data, view.report, view.collectives, view.slots[0])
    assert cmp.instances == 0 and not cmp.has_late_rank
    assert "no collective kernels were matched" in step_sentence(cmp)
    assert header_text(cmp, 0, 9_500 * US) == "rank 0 · ProfilerStep#1 9.50 ms · no collectives here"
    assert view.verdict == NO_COLLECTIVES
    assert not view.lanes[0].has_collectives and [data.trace.lanes[i].name for i in view.lanes[0].comm] == ["stream 7"]


def test_without_step_ranges_the_comparison_is_a_time_window() -> None:
    data, view = _prepared(straggler_pair(step_names=False))
    assert view.slots == []
    slot = window_slot([0, 1], 10 * MS, 20 * MS)
    assert slot.window and slot.spans == {0: (10 * MS, 20 * MS, -1), 1: (10 * MS, 20 * MS, -1)}
    assert rank_offsets(slot, Align.STEP) == rank_offsets(slot, Align.CLOCK) == {0: 10 * MS, 1: 10 * MS}
    cmp = compare_step(data, view.report, view.collectives, slot)
    assert cmp.instances == 2 and cmp.late_rank == 1 and cmp.spread_ns == 2 * MS
    assert step_sentence(cmp).startswith("In this window, rank 1 arrives 2.00 ms after rank 0")
    title = title_text(slot, -1, 0, Align.STEP, 200)
    assert "no step ranges in this trace" in title and "time 0" not in title
    # the main thread without steps: the one that launched the GPU work, from its first row
    rl = view.lanes[1]
    assert data.trace.lanes[rl.thread].name == "thread 101 (python)" and rl.depths[0] == 0


def test_one_rank_is_said_plainly() -> None:
    _, view = _prepared(synthetic_trace())
    assert not view.multi_rank and view.verdict == ONE_RANK and view.slots == []


def test_bare_step_activity_reads_as_untraced_host_work() -> None:
    assert "no operator running" in activity_text("step_<n>")
    assert activity_text("ProfilerStep#<n> › aten::mm") == "ProfilerStep#<n> › aten::mm"
    assert activity_text("") == ""


def test_titles_fit_the_width(pair: tuple[TimelineData, RanksView]) -> None:
    _, view = pair
    for width in (40, 80, 160):
        for align in Align:
            text = title_text(view.slots[1], 1, 3, align, width)
            assert len(text) <= width and "ProfilerStep#2" in text
    assert "(2 of 3)" in title_text(view.slots[1], 1, 3, Align.STEP, 80)


def test_the_comparison_modules_do_not_import_textual() -> None:
    code = (
        "import sys\nimport gputop_trace.tui.view.rank_compare\nimport gputop_trace.tui.view.ranks_view\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'pandas')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cells_cost_does_not_grow_with_events(pair: tuple[TimelineData, RanksView]) -> None:
    """The cells of a line come from binning (a handful of searchsorted calls), so a line with many events yields
    exactly one cell per column."""
    data, view = pair
    cells = _cells(data, view, 0, LineKind.EVENTS, Align.STEP)
    assert len(cells.chars) == W.width and cells.keys.shape == (W.width,)
    assert np.all(cells.events[cells.events >= 0] < len(data.trace))
    assert set(data.trace.kind[cells.events[cells.events >= 0]].tolist()) == {int(Kind.KERNEL)}
