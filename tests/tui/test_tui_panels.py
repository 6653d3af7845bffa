"""Panels 2–4 and 6 fed by the real analyses (gap detector, transfer overlap, range summary, findings), on the
bundled sample and the DDP pair: what they list first, and that Enter shows it on the timeline."""

from __future__ import annotations

import pytest

from gputop_trace.analysis.gaps.detect import find_gaps
from gputop_trace.analysis.ranges import range_summary
from gputop_trace.load.loader import load_paths
from gputop_trace.load.samples import default_sample
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.view.lanes import RowKind
from gputop_trace.tui.widgets.analysis_panels import GapsPanel, RangesPanel, TransfersPanel
from gputop_trace.tui.widgets.details_pane import DetailsPane
from gputop_trace.tui.widgets.findings_panel import FindingsPanel
from tests.conftest import corpus_file
from tests.tui_helpers import app_test, press, screen_text, timeline, wait_loaded, wait_until


@app_test
async def test_gaps_panel_lists_the_longest_gap_and_shows_it_on_the_busy_strip() -> None:
    trace = load_paths([default_sample()])
    longest = max((g for dg in find_gaps(trace) for g in dg.gaps), key=lambda g: g.dur_ns)

    app = GputopApp([default_sample()])
    async with app.run_test(size=(120, 40)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "2")
        panel = main.query_one(GapsPanel)
        first = panel.current_item()
        assert first is not None and first.gap.start_ns == longest.start_ns
        assert first.gap.cause == "data_loading"  # the planted 5 ms sleep in data_load
        text = screen_text(app)
        assert "data loading" in text and "idle 75.1 ms of 80.3 ms" in text
        assert "Fix: overlap input loading with compute" in text
        await press(pilot, "enter")
        tl = timeline(app)
        assert tl.interval is not None and (tl.interval.start, tl.interval.end) == (
            longest.start_ns,
            longest.start_ns + longest.dur_ns,
        )
        assert tl.t0 < longest.start_ns and tl.t1 > longest.start_ns + longest.dur_ns
        assert tl.lines[tl.current].kind == RowKind.UTIL
        strip = tl.plot_text(tl.current)
        assert "data loading 5.66ms" in strip and "╌" in strip
        await press(pilot, "escape")
        await wait_until(pilot, lambda: "host loading data in data_load" in screen_text(app))
        details = screen_text(app)
        assert "cause data loading" in details and "fix overlap input loading" in details
        assert main.query_one(DetailsPane).display


@app_test
async def test_busy_strip_marks_gaps_at_full_zoom() -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        util = next(i for i, ln in enumerate(tl.lines) if ln.kind == RowKind.UTIL)
        strip = tl.plot_text(util)
        assert strip.count("╌data…") == 3  # the three data-loading gaps between the steps, between work
        assert "▁" in strip


@app_test
async def test_transfers_panel_puts_flagged_copies_first() -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "3")
        panel = main.query_one(TransfersPanel)
        first = panel.current_item()
        assert first is not None and first.flags
        text = screen_text(app)
        assert "async copy from pageable memory" in text and "exposed copy time" in text
        await press(pilot, "enter")
        assert app.trace is not None and int(app.trace.kind[timeline(app).selected]) in (Kind.MEMCPY, Kind.MEMSET)
        assert timeline(app).selected == first.event


@app_test
async def test_ranges_panel_lists_the_largest_range_and_jumps_to_it() -> None:
    trace = load_paths([default_sample()])
    top = range_summary(trace)[0]

    app = GputopApp([default_sample()])
    async with app.run_test(size=(120, 40)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "4")
        first = main.query_one(RangesPanel).current_item()
        assert first is not None and first.name == top.name
        await press(pilot, "enter")
        assert app.trace is not None and app.trace.event_name(timeline(app).selected) == top.name
        await press(pilot, "n")  # the next instance of the range
        assert timeline(app).selected == int(top.events[1])


@app_test
async def test_findings_panel_ranks_the_idle_gpu_first_and_jumps_to_evidence() -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=(120, 40)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "6")
        panel = main.query_one(FindingsPanel)
        first = panel.current_item()
        assert first is not None and first.priority == 1 and "idle" in first.title
        assert "Fix:" in screen_text(app)
        before = (timeline(app).t0, timeline(app).t1)
        await press(pilot, "enter")
        tl = timeline(app)
        assert tl.selected >= 0 or tl.interval is not None
        assert (tl.t0, tl.t1) != before


@pytest.mark.corpus
@app_test
async def test_ddp_findings_and_gaps_cover_both_ranks() -> None:
    app = GputopApp([corpus_file("kineto/h200_ddp_2gpu")])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "2")
        gaps = main.query_one(GapsPanel)
        assert {it.gap.rank for it in gaps.items} == {0, 1}
        assert "rank 0 GPU 0" in screen_text(app) and "rank 1 GPU 1" in screen_text(app)
        await press(pilot, "6")
        titles = " ".join(it.title for it in main.query_one(FindingsPanel).items)
        assert "rank" in titles.lower() or "collective" in titles.lower() or "wait" in titles.lower()
        # the timeline has a busy strip with gap marks per GPU
        tl = timeline(app)
        strips = [i for i, ln in enumerate(tl.lines) if ln.kind == RowKind.UTIL]
        assert len(strips) == 2
        assert app.trace is not None
        assert all(app.trace.lanes[ln.lane].kind != LaneKind.OTHER for ln in tl.lines if ln.kind == 2)
