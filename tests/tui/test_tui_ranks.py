"""Panel 7 (Ranks) and ranks side by side (``R``) in the app, on hand-built ranks (``rank_traces``): what they show,
and every key the comparison's help lists doing what it says (Pilot)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.widgets import DataTable

from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.compare import CompareScreen
from gputop_trace.tui.screens.help import HelpScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.view.lanes import RowKind
from gputop_trace.tui.view.rank_compare import Align, LineKind
from gputop_trace.tui.widgets.rank_compare import RankCompare
from gputop_trace.tui.widgets.ranks_panel import RanksPanel
from tests.rank_traces import MS, US, straggler_pair
from tests.tui_helpers import app_test, press, run, screen_text, synthetic_trace, timeline, wait_loaded, wait_until

SIZE = (100, 30)


def _app() -> GputopApp:
    return GputopApp(["ranks"], trace=straggler_pair())


def _compare(app: GputopApp) -> RankCompare:
    assert isinstance(app.screen, CompareScreen)
    return app.screen.compare


async def _open_compare(app: GputopApp, pilot: Any, at: int = 12 * MS) -> RankCompare:
    tl = timeline(app)
    tl.cursor_t = at
    await press(pilot, "R")
    await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.compare.slot is not None)
    return _compare(app)


def _line(cmp: RankCompare, rank: int, kind: LineKind, label: str | None = None) -> int:
    return next(
        i
        for i, ln in enumerate(cmp.lines)
        if ln.rank == rank and ln.kind == kind and (label is None or ln.label == label)
    )


# ---- panel 7 --------------------------------------------------------------------------------------------------------
@app_test
async def test_ranks_panel_names_the_straggler_and_the_waiting() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "7")
        panel = main.query_one(RanksPanel)
        assert main.panel == "ranks" and panel.table.has_focus
        assert [r.rank for r in panel.items] == [0, 1]
        text = " ".join(screen_text(app).split())
        assert "Rank 1 is the last to arrive at 6 of 6 collectives" in text
        assert "rank 0 waits 6.30 ms in total inside collective kernels for it" in text
        assert "ProfilerStep#<n> › aten::slow_op" in text
        lines = screen_text(app).splitlines()
        row0 = next(line for line in lines if line.strip().startswith("0 "))
        assert "6.30 ms" in row0  # rank 0's waiting column
        row1 = next(line for line in lines if line.strip().startswith("1 ⚑"))
        assert row1.split()[-1] == "6"  # rank 1: last 6 times
        # the highlighted rank's line: its steps' shortest and longest read alike, so said once
        assert "rank 0: GPU 0 · 3 steps 9.50 ms · busy" in text


@app_test
async def test_ranks_panel_sorts_and_reverses() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "7")
        panel = main.query_one(RanksPanel)
        entries = {e.action for sec in main.help_sections() for e in sec.entries}
        assert {"cycle_sort", "reverse_sort"} <= entries
        await press(pilot, "o")  # by mean step, longest first
        assert panel.sort == "step"
        for _ in range(4):  # step → busy → collective → exposed → waiting
            await press(pilot, "o")
        assert panel.sort == "waiting" and [r.rank for r in panel.items] == [0, 1]
        assert "waiting▼" in screen_text(app)
        await press(pilot, "r")
        current = panel.current_item()
        assert [r.rank for r in panel.items] == [1, 0] and current is not None and current.rank == 1
        await press(pilot, "o")
        assert panel.sort == "last" and [r.rank for r in panel.items] == [1, 0]


@app_test
async def test_enter_on_a_rank_unfolds_and_shows_its_lanes() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot)
        tl = timeline(app)
        tl.set_collapsed({"r1", "r1/gpu1", "r1/pid101"})
        assert not any(ln.rank == 1 and ln.kind == RowKind.UTIL for ln in tl.lines)
        await press(pilot, "7", "j")
        current = main.query_one(RanksPanel).current_item()
        assert current is not None and current.rank == 1
        await press(pilot, "enter")
        line = tl.current_line
        assert line is not None and line.kind == RowKind.GROUP and line.key == "r1"
        assert tl.top <= tl.current < tl.top + tl.visible_lines
        assert not {"r1", "r1/gpu1", "r1/pid101"} & tl.collapsed
        assert any(ln.rank == 1 and ln.kind == RowKind.UTIL for ln in tl.lines)


@app_test
async def test_one_rank_says_so_in_the_panel_and_on_r() -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "7")
        assert "This trace has one rank: there is nothing to compare" in screen_text(app)
        assert [r.rank for r in main.query_one(RanksPanel).items] == [0]
        await press(pilot, "escape", "R")
        assert isinstance(app.screen, MainScreen)
        assert any("one rank" in n.message for n in app._notifications)


@app_test
async def test_traces_without_collectives_say_so() -> None:
    app = GputopApp(["ranks"], trace=straggler_pair(collectives=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "7")
        assert "No collective kernels in this trace" in screen_text(app)


# ---- ranks side by side ---------------------------------------------------------------------------------------------
@app_test
async def test_compare_opens_on_the_step_under_the_cursor_and_shows_who_is_late() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        cmp = await _open_compare(app, pilot, at=12 * MS)
        assert cmp.slot is not None and cmp.slot.label == "ProfilerStep#2" and cmp.align == Align.STEP
        text = screen_text(app)
        assert "ProfilerStep#2 (2 of 3)" in text and "each rank's step start" in text
        assert "rank 1 · ProfilerStep#2 9.50 ms · LATE 2.00 ms at all-reduce 1" in text
        assert "rank 0 · ProfilerStep#2 9.50 ms · waited 2.10 ms in 2 all-reduces" in text
        assert "rank 1 arrives 2.00 ms after rank 0 at all-reduce 1 of 2" in text
        assert "host was in ProfilerStep#<n> › aten::slow_op" in text
        # drawn: rank 1's all-reduce starts further into its step than rank 0's
        w = cmp.window
        c0 = cmp.plot_text(_line(cmp, 0, LineKind.EVENTS, "NCCL stream 20"))
        c1 = cmp.plot_text(_line(cmp, 1, LineKind.EVENTS, "NCCL stream 20"))
        assert c0.index("ncc") == w.col_of(6 * MS) and c1.index("ncc") == w.col_of(7_500 * US)
        assert c1.index("ncc") > c0.index("ncc")
        # the marker: on rank 1's main thread, 5.5 ms into its step (inside aten::slow_op's box)
        thread1 = cmp.plot_text(_line(cmp, 1, LineKind.EVENTS, "┊"))
        assert "slow_op" in thread1
        assert cmp.comparison is not None and cmp.comparison.figures[1].marker_ns == 16 * MS


@app_test
async def test_compare_from_the_palette() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "ctrl+p")
        await press(pilot, *"Compare ranks")
        await pilot.pause(0.3)
        await press(pilot, "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        await wait_until(pilot, lambda: _compare(app).slot is not None)


@app_test
async def test_compare_opened_before_the_rank_analysis_fills_in_when_it_arrives() -> None:
    app = GputopApp(["ranks"], trace=straggler_pair(), analyses=False)
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot, analyses=False)
        await press(pilot, "R")
        assert isinstance(app.screen, CompareScreen)
        cmp = _compare(app)
        assert cmp.slot is None and "comparing ranks" in screen_text(app)
        await press(pilot, "right_square_bracket")  # says it is not ready, does not fail
        app.run_analyses(main.trace)
        await wait_until(pilot, lambda: cmp.slot is not None)
        assert "LATE 2.00 ms" in screen_text(app)


# ---- every key of the comparison's help -----------------------------------------------------------------------------
Check = Callable[[GputopApp, Any, str], Awaitable[None]]


async def step(app: GputopApp, pilot: Any, key: str, delta: int) -> None:
    cmp = _compare(app)
    assert cmp.slot_index == 1
    await press(pilot, key)
    assert cmp.slot_index == 1 + delta and cmp.slot is not None
    assert cmp.slot.label == f"ProfilerStep#{2 + delta}"
    assert f"ProfilerStep#{2 + delta} ({2 + delta} of 3)" in screen_text(app)
    await press(pilot, key)  # at the end: stays, says so
    assert cmp.slot_index == 1 + delta


async def zoom(app: GputopApp, pilot: Any, key: str, factor: float) -> None:
    cmp = _compare(app)
    if factor > 1:
        cmp.zoom(0.25)
    span = cmp.t1 - cmp.t0
    await press(pilot, key)
    assert cmp.t1 - cmp.t0 == round(span * factor)


async def pan(app: GputopApp, pilot: Any, key: str, direction: int) -> None:
    cmp = _compare(app)
    cmp.zoom(0.25)
    t0, span = cmp.t0, cmp.t1 - cmp.t0
    await press(pilot, key)
    assert cmp.t0 - t0 == round(direction * span * 0.25)


async def line(app: GputopApp, pilot: Any, key: str, delta: int) -> None:
    cmp = _compare(app)
    cmp.current = 2 if delta > 0 else len(cmp.lines) - 1
    before = cmp.current
    await press(pilot, key)
    assert cmp.current == before + delta


async def next_rank(app: GputopApp, pilot: Any, key: str, delta: int) -> None:
    cmp = _compare(app)
    head0, head1 = _line(cmp, 0, LineKind.HEADER), _line(cmp, 1, LineKind.HEADER)
    cmp.current = head0 + 1 if delta > 0 else head1 + 1
    await press(pilot, key)
    assert cmp.current == head1
    await press(pilot, key)
    assert cmp.current == (head1 if delta > 0 else head0)


async def fit(app: GputopApp, pilot: Any, key: str) -> None:
    cmp = _compare(app)
    full = (cmp.t0, cmp.t1)
    cmp.zoom(0.1)
    assert (cmp.t0, cmp.t1) != full
    await press(pilot, key)
    assert (cmp.t0, cmp.t1) == full


async def toggle_align(app: GputopApp, pilot: Any, key: str) -> None:
    cmp = _compare(app)
    assert cmp.offsets == {0: 10 * MS, 1: 10_500 * US}
    await press(pilot, key)
    assert (cmp.align, cmp.offsets) == (Align.CLOCK, {0: 10 * MS, 1: 10 * MS})
    c1 = cmp.plot_text(_line(cmp, 1, LineKind.EVENTS, "NCCL stream 20"))
    assert c1.index("ncc") == cmp.window.col_of(8 * MS)  # 8.0 ms after rank 0's step start
    assert "the common clock" in screen_text(app)
    await press(pilot, key)
    assert cmp.align == Align.STEP


async def open_rank(app: GputopApp, pilot: Any, key: str) -> None:
    cmp = _compare(app)
    cmp.current = _line(cmp, 1, LineKind.HEADER)
    await press(pilot, key)
    await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
    tl = timeline(app)
    assert tl.t0 <= 10_500 * US and tl.t1 >= 20 * MS and tl.t1 - tl.t0 < 11 * MS  # rank 1's ProfilerStep#2
    assert tl.cursor_t == 16 * MS  # the moment rank 0 reached all-reduce 1
    line = tl.current_line
    assert line is not None and line.rank == 1 and line.key == "r1"


async def close(app: GputopApp, pilot: Any, key: str) -> None:
    await press(pilot, key)
    await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
    assert timeline(app).has_focus


async def help_screen(app: GputopApp, pilot: Any, key: str) -> None:
    await press(pilot, key)
    assert isinstance(app.screen, HelpScreen)
    text = screen_text(app)
    assert "Ranks side by side" in text and "step start" in text
    await press(pilot, "escape")
    assert isinstance(app.screen, CompareScreen)


async def quit_app(app: GputopApp, pilot: Any, key: str) -> None:
    await press(pilot, key)
    await wait_until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0


async def palette(app: GputopApp, pilot: Any, key: str) -> None:
    from textual.command import CommandPalette

    await press(pilot, key)
    assert isinstance(app.screen, CommandPalette)
    await press(pilot, "escape")
    await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))


CHECKS: dict[str, Callable[..., Awaitable[None]]] = {
    "step(-1)": lambda a, p, k: step(a, p, k, -1),
    "step(1)": lambda a, p, k: step(a, p, k, 1),
    "zoom(0.5)": lambda a, p, k: zoom(a, p, k, 0.5),
    "zoom(2.0)": lambda a, p, k: zoom(a, p, k, 2.0),
    "pan(-0.25)": lambda a, p, k: pan(a, p, k, -1),
    "pan(0.25)": lambda a, p, k: pan(a, p, k, 1),
    "line(1)": lambda a, p, k: line(a, p, k, 1),
    "line(-1)": lambda a, p, k: line(a, p, k, -1),
    "fit": fit,
    "next_rank(1)": lambda a, p, k: next_rank(a, p, k, 1),
    "next_rank(-1)": lambda a, p, k: next_rank(a, p, k, -1),
    "toggle_align": toggle_align,
    "open_rank": open_rank,
    "close": close,
    "help": help_screen,
    "quit_app": quit_app,
    "command_palette": palette,
}


def _compare_help() -> list[tuple[str, str]]:
    async def body() -> list[tuple[str, str]]:
        app = _app()
        async with app.run_test(size=SIZE) as pilot:
            await wait_loaded(app, pilot)
            await _open_compare(app, pilot)
            screen = app.screen
            assert isinstance(screen, CompareScreen)
            return [(e.action, k) for sec in screen.help_sections() for e in sec.entries for k in e.raw_keys]

    return run(body())


HELP = _compare_help()


def test_every_key_in_the_comparisons_help_has_a_check() -> None:
    listed = {action for action, _ in HELP}
    assert listed == set(CHECKS), f"untested: {listed - set(CHECKS)}, stale checks: {set(CHECKS) - listed}"


@pytest.mark.parametrize(("action", "key"), HELP, ids=[f"{a}-{k}" for a, k in HELP])
@app_test
async def test_compare_key_does_what_the_help_says(action: str, key: str) -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await _open_compare(app, pilot)
        await CHECKS[action](app, pilot, key)


@app_test
async def test_the_compare_footer_shows_only_keys_from_its_help() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await _open_compare(app, pilot)
        screen = app.screen
        shown = {b.binding.action for b in screen.active_bindings.values() if b.binding.show}
        assert shown <= {action for action, _ in HELP}
        footer = screen_text(app).splitlines()[-1]
        for label in ("Prev step", "Next step", "Align", "Back", "Help"):
            assert label in footer


@app_test
async def test_escape_from_the_comparison_then_timeline_keys_and_q_work() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await _open_compare(app, pilot)
        await press(pilot, "question_mark", "escape", "escape")
        assert isinstance(app.screen, MainScreen)
        tl = timeline(app)
        span = tl.t1 - tl.t0
        await press(pilot, "w")
        assert tl.t1 - tl.t0 == span // 2
        await press(pilot, "7")
        assert app.screen.query_one(RanksPanel).query_one(DataTable).has_focus
        await press(pilot, "q")
        await wait_until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0
