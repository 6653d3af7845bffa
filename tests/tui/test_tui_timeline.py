"""The timeline widget's ``render_line`` on a synthetic trace whose cells can be worked out by hand: exact
characters at several zoom levels, colours, the ruler, the gutter, and labels that never overwrite each other."""

from __future__ import annotations

import numpy as np
import pytest
from rich.color import Color

from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.view.palette import COLOURS, Role, Sid
from gputop_trace.tui.view.row_render import event_row_cells
from gputop_trace.tui.view.timeline_data import prepare_timeline
from gputop_trace.tui.view.timeline_math import RowData, Window, column_bounds
from tests.tui_helpers import (
    app_test,
    lane_named,
    line_of_lane,
    plot_of,
    run,
    synthetic_trace,
    timeline,
    wait_loaded,
)

# 62 columns: a 12-column lane gutter and a 50-column plot, so the 1000 ns trace is 20 ns per cell when fitted
SIZE = (62, 20)


@pytest.fixture
def mono(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


def lines_after(steps: str, lanes: list[tuple[str, int]], *, window: tuple[int, int] | None = None) -> list[str]:
    """Plot text of the given (lane name, row) lines after setting the view."""

    async def body() -> list[str]:
        trace = synthetic_trace()
        app = GputopApp(["synthetic.json"], trace=trace, analyses=False)
        async with app.run_test(size=SIZE) as pilot:
            await wait_loaded(app, pilot, analyses=False)
            tl = timeline(app)
            assert (tl.label_width, tl.plot_width) == (12, 50)
            if steps == "zoom-left":
                tl.cursor_t = 0
                tl.zoom(0.5)
            if window is not None:
                tl.set_window(*window)
                tl.cursor_t = window[0]
            await pilot.pause()
            out = []
            for name, depth in lanes:
                if name == "util":
                    idx = next(i for i, ln in enumerate(tl.lines) if ln.kind == 1)
                else:
                    idx = line_of_lane(tl, lane_named(trace, name), depth)
                out.append(plot_of(tl, idx))
            return out

    return run(body())


def test_fitted_trace_cells(mono: None) -> None:
    util, stream, step = lines_after("", [("util", 0), ("stream 7", 0), ("thread 1 (python)", 0)])
    # 20 ns per cell; the cursor (▼, middle of the trace) draws ┆ on empty cells
    assert util == "████████████████████     ┆    ▄▄▄▄▄     █████     "
    assert stream == "sgemm_big 300ns▏vec…     ┆    ▄▄▄▄▄     HtoD…     "
    assert step == "step 1.00µs" + "─" * 39


def test_zoomed_in_around_the_start(mono: None) -> None:
    (stream,) = lines_after("zoom-left", [("stream 7", 0)])
    # 10 ns per cell: the GEMM box doubles, the elementwise box now has room for 8 letters and an ellipsis
    assert stream == "sgemm_big 300ns" + "─" * 15 + "▏vectoriz…" + " " * 10


def test_zoomed_in_on_the_short_kernels(mono: None) -> None:
    (stream,) = lines_after("", [("stream 7", 0)], window=(600, 700))
    # 2 ns per cell: each 5 ns kernel is its own 3-cell box (too narrow for a label), none merged with the next
    assert stream == "───  " * 10


def test_dense_cells_show_busy_fraction_and_mark_several_events() -> None:
    # fitted, the ten 5 ns kernels fill half of cells 30-34 two at a time
    (stream,) = lines_after("", [("stream 7", 0)])
    assert stream[30:35] == "▄▄▄▄▄"


@app_test
async def test_boxes_are_coloured_by_kernel_family() -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace(), analyses=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot, analyses=False)
        tl = timeline(app)
        assert app.trace is not None
        idx = line_of_lane(tl, lane_named(app.trace, "stream 7"))
        strip = tl.render_line(idx - tl.top + 1)
        segs = {seg.text.strip(): seg.style for seg in strip if seg.text.strip()}
        gemm = segs["sgemm_big 300ns"]
        assert gemm is not None and gemm.bgcolor == Color.parse(COLOURS[Sid.K_GEMM])
        copy = next(st for text, st in segs.items() if text.startswith("HtoD"))
        assert copy is not None and copy.bgcolor == Color.parse(COLOURS[Sid.COPY_HTOD])
        dense = segs["▄▄▄▄▄"]
        assert dense is not None and dense.color == Color.parse(COLOURS[Sid.K_OTHER]) and dense.bgcolor != gemm.bgcolor


@app_test
async def test_ruler_gutter_and_every_line_fill_the_width(mono: None) -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace(), analyses=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot, analyses=False)
        tl = timeline(app)
        ruler = tl.render_line(0).text
        assert ruler.startswith("⟷ 1.00 µs")
        assert "▼0.500 µs" in ruler and "│0.0 µs" in ruler
        texts = [tl.render_line(y).text for y in range(tl.size.height)]
        assert all(len(t) == SIZE[0] for t in texts)
        assert texts[1].startswith("▾ GPU 0 · …")  # group header, label cut, never wrapped
        assert texts[3].startswith("  stream 7  ")
        assert any(t.startswith(" ▾thread 1 ") for t in texts)  # "(python)" is in the process header


@app_test
async def test_zoom_changes_the_ruler_precision(mono: None) -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace(), analyses=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot, analyses=False)
        tl = timeline(app)
        tl.set_window(600, 700)
        await pilot.pause()
        ruler = tl.render_line(0).text
        assert ruler.startswith("⟷ 100 ns")
        assert "│0.62 µs" in ruler or "│620 ns" in ruler
        ticks = [w for w in ruler[12:].split("│") if w.strip()]
        assert len(ticks) == len(set(ticks))


def test_labels_never_overwrite_a_neighbour() -> None:
    """Random back-to-back events at many zooms: every box holds its own label (or nothing), touching boxes are
    separated by ▏, and no event is lost from view."""
    trace = synthetic_trace()
    data = prepare_timeline(trace)
    rng = np.random.default_rng(3)
    durs = rng.integers(1, 400, 300)
    starts = np.concatenate(([0], np.cumsum(durs)[:-1]))
    ev = rng.integers(0, len(trace), 300)
    r = RowData.from_intervals(ev, starts, starts + durs)
    labels = {int(e): f"event{int(e)}_name" for e in ev}
    for width in (40, 80, 160):
        for t0, t1 in [(0, int(starts[-1] + durs[-1])), (1000, 6000), (2000, 2600)]:
            bounds = column_bounds(Window(t0, t1, width))
            cells = event_row_cells(data, r, bounds, label_of=lambda e: labels[e], box_fill="─")
            roles = (cells.keys >> 8) & 0xFF
            text = cells.text
            c = 0
            while c < width:
                if roles[c] != Role.BOX:
                    c += 1
                    continue
                e = cells.events[c]
                end = c
                while end + 1 < width and roles[end + 1] == Role.BOX and cells.events[end + 1] == e:
                    end += 1
                chunk = text[c : end + 1]
                if c > 0 and roles[c - 1] == Role.BOX:
                    assert chunk[0] == "▏", (width, t0, chunk)
                    chunk = chunk[1:]
                assert chunk.strip(" ")  # a box is never blank (filled with ─ in monochrome)
                body = chunk.rstrip("─")
                name = labels[int(e)]
                assert body == "" or name.startswith(body.rstrip("…").split(" ")[0]) or body.startswith(name), chunk
                c = end + 1
            # every column that holds an event and is not part of a labelled box shows a glyph
            shown = [
                ch for ch, n, role in zip(text, cells.bins.count, roles, strict=True) if n > 0 and role != Role.BOX
            ]
            assert " " not in shown


def test_idle_gaps_are_marked_on_the_busy_strip(mono: None) -> None:
    """Gap marks (from the gap detector) replace the empty cells of the busy strip with ╌ and a label."""
    from gputop_trace.tui.view.row_render import util_row_cells
    from gputop_trace.tui.view.timeline_data import GapMarks

    busy = RowData.from_intervals(np.array([-1, -1]), np.array([0, 800]), np.array([400, 900]))
    gaps = GapMarks(RowData.from_intervals(np.array([-1]), np.array([400]), np.array([800])), ("idle 400ns sync",))
    cells = util_row_cells(busy, gaps, column_bounds(Window(0, 1000, 50)))
    # 20 ns per cell: busy 0-19, the gap fills cells 20-39 (label after one ╌), busy again 40-44
    assert cells.text == "█" * 20 + "╌idle 400ns sync" + "╌" * 4 + "█" * 5 + " " * 5
    roles = (cells.keys >> 8) & 0xFF
    assert set(roles[20:40].tolist()) == {Role.BOX}
    # zoomed out so that the gap covers less than half of a cell: no mark, the busy fraction shows instead
    coarse = util_row_cells(busy, gaps, column_bounds(Window(0, 1000, 1)))
    assert coarse.text == "▄"  # 500 of 1000 ns busy


@app_test
async def test_gap_marks_reach_the_screen() -> None:
    from gputop_trace.tui.view.timeline_data import GapMarks

    app = GputopApp(["synthetic.json"], trace=synthetic_trace(), analyses=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot, analyses=False)
        tl = timeline(app)
        row = RowData.from_intervals(np.array([-1]), np.array([400]), np.array([600]))
        tl.data.set_gaps({(0, 0): GapMarks(row, ("idle 200ns",))})
        tl.invalidate()
        await pilot.pause()
        util = next(i for i, ln in enumerate(tl.lines) if ln.kind == 1)
        assert plot_of(tl, util)[20:30] == "╌idle 200…"
