"""The critical path in the app (Pilot): ``p`` draws the step's path over the lanes and hides it, ``n`` / ``N`` walk
its segments in order while it is shown (and a name's instances again once it is hidden), panel 9 shows the numbers
``critical_paths`` gives, ``[`` / ``]`` change the step, Enter on an item shows it, a failure is a dialog. On a
hand-built path over the synthetic trace (exact numbers, the what-if column), on the bundled sample and on the
2-rank DDP corpus trace (the real analysis)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from rich.style import Style

from gputop_trace.analysis.critical_path import path as cp_module
from gputop_trace.analysis.critical_path.path import StepPath, critical_paths
from gputop_trace.analysis.findings import assemble as _findings  # noqa: F401  (see _patch_paths)
from gputop_trace.load.loader import load_paths
from gputop_trace.load.samples import default_sample
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.view.critical_path_view import (
    breakdown_lines,
    format_pct,
    item_rows,
    path_marks,
    step_line,
    walk,
)
from gputop_trace.tui.widgets.critical_path_panel import CriticalPathPanel
from gputop_trace.tui.widgets.timeline import Timeline
from gputop_trace.units import format_ns
from tests.conftest import corpus_file
from tests.critical_path_fixtures import event_at, lane_of, synthetic_path
from tests.tui_helpers import (
    app_test,
    line_of_lane,
    press,
    screen_text,
    synthetic_trace,
    timeline,
    wait_loaded,
    wait_until,
)

PATH_BG = "#ff5fd7"  # palette: Overlay.PATH
IDLE_BG = "#6a2a60"  # palette: Overlay.PATH_IDLE
SIZES = [(80, 24), (160, 48)]


def _bg_columns(tl: Timeline, line: int, colour: str) -> list[int]:
    """The plot columns of timeline line ``line`` drawn with background ``colour``."""
    y = line - tl.top + 1
    col = 0
    out: list[int] = []
    for seg in tl.render_line(y):
        st: Style | None = seg.style
        bg = st.bgcolor.name if st is not None and st.bgcolor is not None else ""
        n = len(seg.text)
        if bg == colour:
            out.extend(range(col, col + n))
        col += n
    return [c - tl.label_width for c in out if c >= tl.label_width]


def _patch_paths(monkeypatch: pytest.MonkeyPatch, make: Any) -> None:
    """The app's critical path (panel 9, p) is ``make(trace)``; the findings' critical-path finding keeps the real
    analysis (the findings module, imported at the top, holds its own reference)."""
    monkeypatch.setattr(cp_module, "critical_paths", lambda trace, **kw: make(trace))


async def _paths_ready(app: GputopApp, pilot: Any) -> MainScreen:
    main = app.screen
    assert isinstance(main, MainScreen)
    await wait_until(pilot, lambda: main.critical_path.step_paths is not None)
    await pilot.pause()
    return main


# ---- the synthetic trace with a hand-built path --------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@app_test
async def test_p_draws_the_path_and_n_walks_it_in_order(size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_paths(monkeypatch, lambda t: [synthetic_path(t)])

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        trace = main.trace
        tl = timeline(app)
        tl.fit_all()
        tl.cursor_t = 0
        assert tl.path_marks is None
        await press(pilot, "p")
        await wait_until(pilot, lambda: main.critical_path.shown)
        await pilot.pause()
        path = main.critical_path.current
        assert path is not None and path.step_name == "ProfilerStep#0"
        # drawn: the stream's kernels and copy in the path's colour, the idle 400–600 ns on the GPU busy strip
        gpu = line_of_lane(tl, lane_of(trace, "stream 7"))
        w = tl.window
        cols = set(_bg_columns(tl, gpu, PATH_BG))
        for s, e in ((3, 300), (300, 400), (800, 900)):
            assert set(range(w.col_of(s), w.col_of(e - 1) + 1)) <= cols | {w.col_of(tl.cursor_t)}
        assert w.col_of(500) not in cols  # the idle stretch is not on the stream
        util = next(i for i, ln in enumerate(tl.lines) if ln.kind == 1 and (ln.rank, ln.device) == (0, 0))
        idle_cols = set(_bg_columns(tl, util, IDLE_BG))
        assert w.col_of(450) in idle_cols and w.col_of(550) in idle_cols
        assert w.col_of(350) not in idle_cols
        # n from the cursor at 0: every segment in order; its event selected (idle: its span on the strip)
        for i, seg in enumerate(path.segments):
            await press(pilot, "n")
            assert main.critical_path.segment == i
            if seg.event >= 0:
                assert tl.selected == seg.event
                assert tl.t0 <= seg.start_ns and seg.start_ns + seg.dur_ns <= tl.t1
            else:
                assert tl.selected == -1 and tl.interval is not None
                assert (tl.interval.start, tl.interval.end) == (seg.start_ns, seg.start_ns + seg.dur_ns)
                line = tl.current_line
                assert line is not None
                if seg.lane >= 0:  # a wait on the CPU thread: the lane cursor on that thread
                    assert (line.kind, line.lane) == (2, seg.lane)
                else:  # idle time: on the GPU busy strip
                    assert (line.kind, line.rank, line.device) == (1, 0, 0)
            share = format_pct(100 * seg.dur_ns / path.length_ns)
            assert f"path {i + 1}/7" in screen_text(app).splitlines()[-2]  # the status bar
            if size[0] >= 160:
                assert share in screen_text(app)  # the details pane says its share of the path
        await press(pilot, "n")  # past the end: stays on the last segment
        assert main.critical_path.segment == 6
        await press(pilot, "N", "N")
        assert main.critical_path.segment == 4 and tl.selected == event_at(trace, "tiny", 600)
        # an event selected otherwise: the details say whether and how much of it is on the path
        tl.select(event_at(trace, "sgemm_big", 0))
        await pilot.pause()
        assert "297 ns on the path" in " ".join(screen_text(app).split())
        tl.select(event_at(trace, "tiny", 610))
        await pilot.pause()
        assert "not on the path of ProfilerStep#0" in " ".join(screen_text(app).split())
        tl.select(event_at(trace, "tiny", 600))
        await pilot.pause()
        # p hides the path: nothing drawn, n walks the name's instances again
        await press(pilot, "p")
        assert tl.path_marks is None and not main.critical_path.shown
        assert not _bg_columns(tl, gpu, PATH_BG)
        await press(pilot, "n")
        assert tl.selected == event_at(trace, "tiny", 610)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@app_test
async def test_panel_9_shows_the_breakdown_and_the_what_if(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    note = "no step ranges: the whole recording of the rank is one step"
    _patch_paths(monkeypatch, lambda t: [replace(synthetic_path(t), notes=(note,))])

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "9")
        await _paths_ready(app, pilot)
        assert main.panel == "path"
        text = screen_text(app)
        wording = "critical path 900 ns (90.0% of the step)" if size[0] >= 160 else "path 900 ns (90.0%)"
        assert f"ProfilerStep#0 (1{' of ' if size[0] >= 160 else '/'}1) · step 1.00 µs · {wording}" in text
        assert "kernel 402 ns 44.7%" in text and "idle 200 ns 22.2%" in text and "launch 3 ns 0.3%" in text
        assert (note if size[0] >= 160 else note[:60]) in text  # what the analysis says about the path
        table = main.query_one(CriticalPathPanel).table
        assert table.row_count == 7
        first = [str(c) for c in table.get_row_at(0)]
        # on path, share, (what), 2×: step (wide), 2× saves, gone: step (wide), gone saves, item
        assert first[0].strip() == "297 ns" and first[1].strip() == "33.0%" and first[-1] == "sgemm_big"
        wants = ["140 ns", "250 ns"] + (["760 ns", "650 ns"] if size[0] >= 160 else [])
        assert all(v in [c.strip() for c in first] for v in wants)
        idle = [str(c).strip() for c in table.get_row_at(1)]
        assert idle[-1] == "idle: GPU" and idle.count("–") >= 2  # no what-if for idle time
        assert "2× faster: path 760 ns (saves 140 ns" in " ".join(screen_text(app).split())
        # Enter on the copy's row: the path drawn, its segment selected on the timeline
        await press(pilot, "j", "j", "j", "j", "enter")
        tl = timeline(app)
        assert main.critical_path.shown and main.critical_path.segment == 6
        assert tl.selected == event_at(main.trace, "Memcpy HtoD", 800)
        assert main.panel == "details"


@app_test
async def test_a_failed_analysis_is_a_dialog_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(trace: Any) -> list[StepPath]:
        raise RuntimeError("graph exploded")

    _patch_paths(monkeypatch, boom)

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "p")
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorDialog))
        await pilot.pause()
        text = screen_text(app)
        assert "Could not work out the critical path" in text and "RuntimeError: graph exploded" in text
        await press(pilot, "escape")
        assert app.screen is main and not main.critical_path.shown
        await press(pilot, "9")
        assert "graph exploded" in screen_text(app)
        await press(pilot, "9", "w")  # the app still takes keys
        assert app.return_code is None


@app_test
async def test_the_panel_says_it_is_computing_until_the_paths_arrive(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    release = threading.Event()

    def slow(trace: Any) -> list[StepPath]:
        release.wait(20)
        return [synthetic_path(trace)]

    _patch_paths(monkeypatch, slow)

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "9")
        assert "working out every step's path" in screen_text(app)
        await pilot.pause(1.3)
        assert "s so far)" in screen_text(app)  # the seconds it has taken, once a second
        await press(pilot, "9", "w", "9")  # the app takes keys meanwhile
        release.set()
        await _paths_ready(app, pilot)
        assert "working out" not in screen_text(app) and "ProfilerStep#0" in screen_text(app)
        assert main.query_one(CriticalPathPanel)._clock is None


@app_test
async def test_no_step_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_paths(monkeypatch, lambda t: [])

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "9")
        await _paths_ready(app, pilot)
        assert "No step to analyse" in screen_text(app)
        await press(pilot, "9", "p")
        assert not main.critical_path.shown and timeline(app).path_marks is None


# ---- the real analysis --------------------------------------------------------------------------------------------
@app_test
async def test_on_the_sample_the_panel_shows_what_critical_paths_gives() -> None:
    paths = critical_paths(load_paths([default_sample()]))
    assert len(paths) >= 2

    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        tl = timeline(app)
        tl.cursor_t = 0  # before the first step: the panel starts on the first
        await press(pilot, "9")
        await _paths_ready(app, pilot)
        assert main.critical_path.step_paths == paths
        panel = main.query_one(CriticalPathPanel)
        for index in range(len(paths)):
            if index:
                await press(pilot, "right_square_bracket")
            path = paths[index]
            assert panel.index == index
            text = screen_text(app)
            assert step_line(path, index, len(paths), multi_rank=False) in text
            for line in breakdown_lines(path, 60):
                for entry in line.split(" · "):
                    assert entry in text
            rows = item_rows(path)
            assert panel.table.row_count == len(rows)
            top = [str(c).strip() for c in panel.table.get_row_at(0)]
            assert top[0] == format_ns(rows[0].on_path_ns) and top[1] == format_pct(rows[0].share_pct)
            for w in path.what_if:
                row = next(i for i, r in enumerate(rows) if (r.category, r.label) == (w.category, w.item))
                cells = [str(c).strip() for c in panel.table.get_row_at(row)]
                assert format_ns(w.if_2x_ns) in cells and format_ns(w.step_ns - w.if_gone_ns) in cells
        await press(pilot, "right_square_bracket")
        assert panel.index == len(paths) - 1  # no step after the last
        # p (with the panel's step shown) draws that path; [ in the panel moves the drawn path too
        await press(pilot, "left_square_bracket")
        assert panel.index == len(paths) - 2
        await press(pilot, "9")
        tl.cursor_t = paths[1].start_ns + 1
        await press(pilot, "p")
        assert main.critical_path.shown and main.critical_path.current == paths[1] and panel.index == 1
        assert tl.path_marks is not None and tl.path_marks
        # [ in the panel moves the drawn path to the previous step
        await press(pilot, "9", "left_square_bracket")
        assert main.critical_path.current == paths[0]
        assert tl.path_marks == path_marks(main.trace, paths[0], main.data.util.keys())


@pytest.mark.corpus
@app_test
async def test_ddp_p_shows_the_path_of_the_step_under_the_cursor_on_the_lanes_rank() -> None:
    ddp = corpus_file("kineto/h200_ddp_2gpu")
    paths = critical_paths(load_paths([ddp]))
    ranks = {p.rank for p in paths}
    assert ranks == {0, 1}

    app = GputopApp([ddp])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        tl = timeline(app)
        target = next(p for p in paths if p.rank == 1 and p.step == 2)
        assert tl.reveal_rank(1)
        tl.cursor_t = target.start_ns + target.dur_ns // 2
        await press(pilot, "p")
        await wait_until(pilot, lambda: main.critical_path.shown)
        assert main.critical_path.current == target
        said = [n.message for n in app._notifications]  # the notification names the rank's step
        assert len(said) == 1 and said[0].startswith(f"rank 1 · {target.step_name}: path "), said
        cursor = tl.cursor_t
        await press(pilot, "n")
        assert main.critical_path.segment == walk(target, -1, 1, cursor) >= 0
        seg = target.segments[main.critical_path.segment]
        if seg.event >= 0:
            assert tl.selected == seg.event
        else:
            assert tl.interval is not None and tl.interval.start == seg.start_ns
        await press(pilot, "9")
        assert step_line(target, paths.index(target), len(paths), multi_rank=True) in screen_text(app)


@app_test
async def test_the_palette_shows_and_hides_the_path_and_opens_panel_9(monkeypatch: pytest.MonkeyPatch) -> None:
    from gputop_trace.tui.commands import palette_entries

    _patch_paths(monkeypatch, lambda t: [synthetic_path(t)])

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        main = await wait_loaded(app, pilot)
        entries = {text: cb for text, _, cb in palette_entries(main)}
        entries["Critical path: show / hide"]()
        await wait_until(pilot, lambda: main.critical_path.shown)
        assert timeline(app).path_marks is not None
        entries["Critical path: show / hide"]()
        await pilot.pause()
        assert not main.critical_path.shown and timeline(app).path_marks is None
        entries["Panel: Critical path"]()
        await pilot.pause()
        assert main.panel == "path" and "ProfilerStep#0 (1/1)" in screen_text(app)
