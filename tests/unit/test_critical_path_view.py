"""The critical path's view logic (no Textual): where each segment is drawn, what n / N go to, the words for a
segment, the panel's breakdown lines, item rows and what-if savings, the step under the cursor, the tab line."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gputop_trace.analysis.critical_path.path import PathSegment, StepPath
from gputop_trace.tui.view.critical_path_view import (
    breakdown_items,
    breakdown_lines,
    event_rows,
    first_segment_of,
    format_pct,
    item_rows,
    path_at,
    path_marks,
    segment_rows,
    segment_status,
    segment_words,
    step_line,
    walk,
)
from gputop_trace.tui.widgets.panel_tabs import PANELS, tabs_text
from tests.critical_path_fixtures import event_at, lane_of, synthetic_path
from tests.tui_helpers import synthetic_trace

STRIPS = {(0, 0)}  # the synthetic trace's one GPU busy strip


def test_each_segment_is_drawn_on_its_events_row_and_idle_time_on_the_gpu_strip() -> None:
    trace = synthetic_trace()
    path = synthetic_path(trace)
    marks = path_marks(trace, path, STRIPS)
    gpu, cpu = lane_of(trace, "stream 7"), lane_of(trace, "thread 1 (python)")
    launch = event_at(trace, "cudaLaunchKernel", 0)
    launch_row = (int(trace.lane[launch]), int(trace.depth[launch]))
    assert launch_row == (cpu, 2)  # step › aten::mm › cudaLaunchKernel
    assert marks.row_spans(*launch_row) == [(0, 3, 0, False)]
    # the kernels and the copy on the stream, over the segment's own span (sgemm_big from 3 ns, not from 0)
    assert marks.row_spans(gpu, 0) == [
        (3, 300, 1, False),
        (300, 400, 2, False),
        (600, 605, 4, False),
        (800, 900, 6, False),
    ]
    # a wait with a lane but no event: that lane's first row
    assert marks.row_spans(cpu, 0) == [(605, 800, 5, False)]
    # idle time with no lane: the busy strip of the GPU the path runs on, drawn as idle
    assert marks.strip_spans(0, 0) == [(400, 600, 3, True)]
    assert marks.strip_of == {3: (0, 0)}
    # a folded lane's first row shows the spans of all its rows
    assert marks.row_spans(cpu, 0, folded=True) == [(0, 3, 0, False), (605, 800, 5, False)]


def test_a_frame_gets_only_the_spans_in_its_window() -> None:
    trace = synthetic_trace()
    marks = path_marks(trace, synthetic_path(trace), STRIPS)
    gpu, cpu = lane_of(trace, "stream 7"), lane_of(trace, "thread 1 (python)")

    def starts(arrays: tuple[Any, ...]) -> list[int]:
        return [int(x) for x in arrays[0]]

    assert starts(marks.row_window(gpu, 0, 0, 1000)) == [3, 300, 600, 800]
    assert starts(marks.row_window(gpu, 0, 300, 600)) == [300]  # [3, 300) ends at 300; [600, 605) starts at 600
    assert starts(marks.row_window(gpu, 0, 299, 601)) == [3, 300, 600]
    assert not starts(marks.row_window(gpu, 0, 400, 600))
    assert not starts(marks.row_window(gpu, 0, 2000, 3000))
    assert starts(marks.row_window(cpu, 0, 0, 1000, folded=True)) == [0, 605]
    s, e, idle = marks.strip_window(0, 0, 500, 501)
    assert (starts((s,)), [int(x) for x in e], idle.tolist()) == ([400], [600], [True])
    assert not starts(marks.strip_window(0, 1, 0, 1000))


def test_idle_time_on_a_lane_is_drawn_on_that_lane() -> None:
    trace = synthetic_trace()
    gpu = lane_of(trace, "stream 7")
    marks = path_marks(trace, synthetic_path(trace, idle_lane=gpu), STRIPS)
    assert (400, 600, 3, True) in marks.row_spans(gpu, 0)
    assert not marks.strips


def test_without_a_gpu_strip_idle_time_goes_on_the_nearest_segments_row() -> None:
    trace = synthetic_trace()
    path = synthetic_path(trace)
    marks = path_marks(trace, path, set())
    gpu = lane_of(trace, "stream 7")
    assert (400, 600, 3, True) in marks.row_spans(gpu, 0)  # the previous segment (the elementwise kernel)'s row
    assert not marks.strips and not marks.strip_of


def test_n_and_n_shift_walk_the_segments_in_order_and_stop_at_the_ends() -> None:
    path = synthetic_path(synthetic_trace())
    # nothing walked yet: from the cursor, the segment under it (spans [0, 3) [3, 300) [300, 400) [400, 600)
    # [600, 605) [605, 800) [800, 900))
    assert walk(path, -1, 1, 350) == 2
    assert walk(path, -1, -1, 350) == 2
    assert walk(path, -1, 1, 300) == 2
    assert walk(path, -1, -1, 299) == 1
    assert walk(path, -1, 1, 0) == 0
    assert walk(path, -1, 1, 950) == -1  # after the path: nothing next
    assert walk(path, -1, -1, 950) == 6  # the last segment before the cursor
    assert walk(path, -1, 1, 10_000) == -1
    assert walk(replace(path, segments=path.segments[1:]), -1, -1, 0) == -1  # nothing at or before the cursor
    order = [0]
    while (nxt := walk(path, order[-1], 1, 0)) >= 0:
        order.append(nxt)
    assert order == list(range(len(path.segments)))
    assert walk(path, 0, -1, 0) == -1
    assert walk(path, 4, -1, 0) == 3
    assert walk(replace(path, segments=()), -1, 1, 0) == -1


def test_a_segment_in_words() -> None:
    path = synthetic_path(synthetic_trace())
    assert segment_words(path, 1) == "path 2/7 · kernel · sgemm_big · 297 ns · 33.0% of the path"
    assert segment_status(path, 3) == "path 4/7 idle 22.2%"
    rows = dict(segment_rows(path, 5, multi_rank=False))
    assert rows["critical path"] == "segment 6 of 7 of ProfilerStep#0"
    assert rows["on the path"].startswith("sync wait · 195 ns from ")
    assert rows["share"] == "21.7% of the path (900 ns)"
    assert first_segment_of(path, "kernel", "tiny") == 4
    assert first_segment_of(path, "kernel", "nope") == -1


def test_an_event_selected_while_the_path_is_shown_says_how_much_of_it_is_on_the_path() -> None:
    trace = synthetic_trace()
    path = synthetic_path(trace)
    gemm = event_at(trace, "sgemm_big", 0)
    assert event_rows(path, gemm, 0, 300, multi_rank=False) == [
        ("critical path", "1 segment of ProfilerStep#0: 297 ns on the path"),
        ("share", "33.0% of the path (900 ns)"),
    ]
    tiny = event_at(trace, "tiny", 610)  # the second tiny kernel: not on the path, inside the step
    assert event_rows(path, tiny, 610, 615, multi_rank=False) == [
        ("critical path", "not on the path of ProfilerStep#0")
    ]
    assert event_rows(path, tiny, 2000, 2005, multi_rank=False) == []  # outside the step: nothing to say


def test_shares_never_read_as_zero_or_above_100() -> None:
    assert format_pct(0.0) == "0.0%"
    assert format_pct(0.01) == "<0.1%"
    assert format_pct(100.0) == "100.0%"


def test_the_breakdown_sums_to_the_path_and_packs_into_the_width() -> None:
    path = synthetic_path(synthetic_trace())
    items = breakdown_items(path)
    assert [c for c, _, _ in items] == ["kernel", "idle", "sync_wait", "copy", "launch"]  # most first, no zeros
    assert sum(ns for _, ns, _ in items) == path.length_ns
    assert breakdown_lines(path, 160) == [
        "kernel 402 ns 44.7% · idle 200 ns 22.2% · sync wait 195 ns 21.7% · copy 100 ns 11.1% · launch 3 ns 0.3%"
    ]
    narrow = breakdown_lines(path, 42)
    assert narrow == [
        "kernel 402 ns 44.7% · idle 200 ns 22.2%",
        "sync wait 195 ns 21.7% · copy 100 ns 11.1%",
        "launch 3 ns 0.3%",
    ]
    assert all(len(line) <= 42 for line in narrow)
    assert breakdown_lines(path, 41)[1] == "sync wait 195 ns 21.7%"
    # an entry wider than the width gets a line of its own, never broken
    assert breakdown_lines(path, 5)[0] == "kernel 402 ns 44.7%"
    assert breakdown_lines(replace(path, breakdown={}), 80) == ["nothing on the path"]


def test_item_rows_carry_the_what_if_and_its_savings() -> None:
    path = synthetic_path(synthetic_trace())
    rows = item_rows(path)
    assert [(r.category, r.label, r.on_path_ns) for r in rows] == list(path.by_item)
    gemm, idle = rows[0], rows[1]
    assert gemm.what_if is not None and (gemm.saving_2x_ns, gemm.saving_gone_ns) == (140, 250)
    assert gemm.share_pct == pytest.approx(33.0)
    assert idle.what_if is None and idle.saving_2x_ns is None and idle.saving_gone_ns is None
    copy = next(r for r in rows if r.category == "copy")
    assert (copy.saving_2x_ns, copy.saving_gone_ns) == (50, 100)
    assert len(item_rows(path, limit=3)) == 3


def test_kernels_in_the_item_table_read_as_on_the_timeline() -> None:
    long = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
    )
    path = replace(
        synthetic_path(synthetic_trace()),
        by_item=(("kernel", long, 500), ("cpu_op", "aten::mm", 300), ("idle", "idle: GPU", 100)),
    )
    rows = item_rows(path)
    assert rows[0].label == long and rows[0].short == "Fill·vectorized_elementwise_kernel"
    assert [r.short for r in rows[1:]] == ["aten::mm", "idle: GPU"]


def _step(rank: int, step: int, start: int, dur: int) -> StepPath:
    seg = PathSegment(start, dur, "kernel", "k", -1, -1, rank)
    return StepPath(rank, step, f"step_{step}", start, dur, dur, (seg,), {"kernel": dur}, (("kernel", "k", dur),), ())


def test_the_step_under_the_cursor_on_the_lanes_rank() -> None:
    paths = [_step(0, 0, 0, 100), _step(0, 1, 100, 100), _step(1, 0, 10, 100), _step(1, 1, 110, 100)]
    assert path_at(paths, 0, 150) == 1
    assert path_at(paths, 1, 150) == 3
    assert path_at(paths, 1, 50) == 2
    assert path_at(paths, None, 50) == 0
    assert path_at(paths, 1, 5) == 0  # rank 1 has no step yet: any rank's step holding the time
    assert path_at(paths, 0, 10_000) == 1  # after the last step: the rank's last one
    assert path_at(paths, 7, 150) == 1  # a rank with no step: any rank's
    assert path_at([], 0, 0) == 0


def test_the_step_line_says_step_time_and_path_length() -> None:
    path = synthetic_path(synthetic_trace())
    assert step_line(path, 0, 3, multi_rank=False) == (
        "ProfilerStep#0 (1 of 3) · step 1.00 µs · critical path 900 ns (90.0% of the step) · 7 segments"
    )
    assert step_line(path, 0, 3, multi_rank=False, width=78) == (
        "ProfilerStep#0 (1/3) · step 1.00 µs · path 900 ns (90.0%) · 7 segments"
    )
    assert (
        step_line(path, 0, 3, multi_rank=False, width=50) == "ProfilerStep#0 (1/3) · step 1.00 µs · path 900 ns (90.0%)"
    )
    assert step_line(replace(path, step_name="", rank=2), 1, 3, multi_rank=True).startswith("rank 2 · whole trace")


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_tab_line_names_every_panel_including_the_critical_path(width: int) -> None:
    text = tabs_text("path", width).plain
    assert len(text) <= width and "…" not in text
    assert ("9Path" if width == 80 else "9 Critical path") in text
    for i in range(1, len(PANELS) + 1):
        assert str(i) in text


def test_the_path_stays_visible_without_colour_and_differs_from_the_selection() -> None:
    from gputop_trace.tui.view.palette import Overlay, Palette, Role, Sid, style_key

    for mono in (False, True):
        pal = Palette(mono=mono)
        box, blank = int(Role.BOX), int(Role.BLANK)
        plain = pal.style(style_key(int(Sid.K_GEMM), box))
        on_path = pal.style(style_key(int(Sid.K_GEMM), box, int(Overlay.PATH)))
        idle = pal.style(style_key(0, blank, int(Overlay.PATH_IDLE)))
        selected = pal.style(style_key(int(Sid.K_GEMM), box, int(Overlay.SELECTED)))
        assert len({plain, on_path, idle, selected}) == 4
        if mono:  # no colour at all: underlined, and an idle stretch (blank cells) shows as a line
            assert on_path.underline and on_path.bold and on_path.bgcolor is None
            assert idle.underline and idle.color is None
        else:
            assert on_path.bgcolor is not None and idle.bgcolor is not None and on_path.bgcolor != idle.bgcolor
