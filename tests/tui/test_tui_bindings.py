"""Every key the help screen lists does what it says (Pilot, on a synthetic trace), and Esc / q always work:
after the palette, the help screen, a prompt or a panel, nothing traps the keyboard."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import ContentSwitcher, DataTable, Input

from gputop_trace.model.kinds import Kind
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import PromptScreen
from gputop_trace.tui.screens.help import HelpScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.widgets.drilldown import DrilldownPanel
from gputop_trace.tui.widgets.kernels_panel import KernelTable
from gputop_trace.tui.widgets.ncu_elsewhere import NcuElsewhereScreen
from tests.tui_helpers import (
    app_test,
    lane_named,
    line_of_lane,
    press,
    run,
    screen_text,
    synthetic_trace,
    timeline,
    wait_loaded,
    wait_until,
)

Check = Callable[[GputopApp, Any, str], Awaitable[None]]
SIZE = (80, 24)


def _events(app: GputopApp, name: str) -> list[int]:
    t = app.trace
    assert t is not None
    nid = t.name_ids[name]
    return [int(i) for i in range(len(t)) if int(t.name[i]) == nid]


def _main(app: GputopApp) -> MainScreen:
    assert isinstance(app.screen, MainScreen)
    return app.screen


async def _on_stream(app: GputopApp) -> None:
    tl = timeline(app)
    assert app.trace is not None
    tl.current = line_of_lane(tl, lane_named(app.trace, "stream 7"))


# ---- checks, one per action ---------------------------------------------------------------------------------------
async def zoom_in(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    span, col = tl.t1 - tl.t0, tl.window.col_of(tl.cursor_t)
    await press(pilot, key)
    assert tl.t1 - tl.t0 == span // 2
    assert abs(tl.window.col_of(tl.cursor_t) - col) <= 1  # zoomed around the cursor


async def zoom_out(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    tl.zoom(0.25)
    span = tl.t1 - tl.t0
    await press(pilot, key)
    assert tl.t1 - tl.t0 == span * 2


async def pan(app: GputopApp, pilot: Any, key: str, direction: int) -> None:
    tl = timeline(app)
    tl.zoom(0.25)
    t0, span = tl.t0, tl.t1 - tl.t0
    await press(pilot, key)
    assert tl.t0 - t0 == round(direction * span * 0.25)


async def line_move(app: GputopApp, pilot: Any, key: str, delta: int) -> None:
    tl = timeline(app)
    tl.current = 2 if delta > 0 else len(tl.lines) - 1
    before = tl.current
    await press(pilot, key)
    expected = max(0, min(len(tl.lines) - 1, before + delta))
    assert tl.current == expected != before


async def fit(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    tl.zoom(0.1)
    assert (tl.t0, tl.t1) != (tl.lo, tl.hi)
    await press(pilot, key)
    assert (tl.t0, tl.t1) == (tl.lo, tl.hi)


async def zoom_selection(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    (elem,) = _events(app, "vectorized_elementwise_kernel")
    tl.select(elem, reveal=False)
    await press(pilot, key)
    assert tl.t0 < 300 and tl.t1 > 400 and tl.t1 - tl.t0 <= 130  # 100 ns kernel plus 10% each side


async def step_event(app: GputopApp, pilot: Any, key: str, direction: int) -> None:
    tl = timeline(app)
    await _on_stream(app)
    tiny = _events(app, "tiny")
    tl.select(tiny[4], reveal=False)
    await press(pilot, key)
    assert tl.selected == tiny[4 + direction]


async def instance(app: GputopApp, pilot: Any, key: str, direction: int) -> None:
    tl = timeline(app)
    tiny = _events(app, "tiny")
    tl.select(tiny[3])
    await press(pilot, key)
    assert tl.selected == tiny[3 + direction]


async def cursor(app: GputopApp, pilot: Any, key: str, direction: int) -> None:
    tl = timeline(app)
    col = tl.window.col_of(tl.cursor_t)
    await press(pilot, key)
    assert tl.window.col_of(tl.cursor_t) == col + direction


async def select(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    await _on_stream(app)
    tl.cursor_t = 150  # inside sgemm_big [0, 300)
    await press(pilot, key)
    assert tl.selected == _events(app, "sgemm_big")[0]
    # Enter on a group header folds it
    tl.current = 0
    n = len(tl.lines)
    await press(pilot, key)
    assert tl.lines[0].folded and len(tl.lines) < n


async def fold(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    assert app.trace is not None
    tl.current = line_of_lane(tl, lane_named(app.trace, "thread 1 (python)"))
    n = len(tl.lines)
    await press(pilot, key)
    assert len(tl.lines) == n - 2 and tl.lines[tl.current].folded  # 3 rows -> 1
    await press(pilot, key)
    assert len(tl.lines) == n


async def follow_flow(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    assert app.trace is not None
    gemm = _events(app, "sgemm_big")[0]
    tl.select(gemm)
    await press(pilot, key)
    assert app.trace.kind[tl.selected] == Kind.API and app.trace.event_name(tl.selected) == "cudaLaunchKernel"
    assert tl.lines[tl.current].lane == lane_named(app.trace, "thread 1 (python)")
    await press(pilot, key)
    assert tl.selected == gemm


async def search(app: GputopApp, pilot: Any, key: str) -> None:
    tl = timeline(app)
    await press(pilot, key)
    assert isinstance(app.screen, PromptScreen)
    await press(pilot, *"tiny", "enter")
    main = _main(app)
    await wait_until(pilot, lambda: main.matches is not None)
    tiny = _events(app, "tiny")
    assert main.matches is not None and len(main.matches) == 10
    assert tl.selected in tiny
    first = tl.selected
    await press(pilot, "n")
    assert tl.selected == tiny[tiny.index(first) + 1]
    assert "/tiny/" in screen_text(app) and "matches" in screen_text(app)


async def drilldown(app: GputopApp, pilot: Any, key: str) -> None:
    # GPUTOP_NCU points nowhere (see the test): the panel must say that ncu is missing, for this very kernel
    tl = timeline(app)
    gemm = _events(app, "sgemm_big")[0]
    tl.select(gemm)
    await press(pilot, key)
    # the commands to run where ncu is, in a dialog (issue 20.6), then in the panel
    await wait_until(pilot, lambda: isinstance(app.screen, NcuElsewhereScreen))
    assert "gputop-trace ncu --kernel sgemm_big" in " ".join(screen_text(app).split())
    await press(pilot, "escape")
    main = _main(app)
    assert main.panel == "drilldown"
    req = main.query_one(DrilldownPanel).request
    assert req is not None and req.kernel_name == "sgemm_big" and req.launch == 0
    assert req.nvtx_range == "step" and req.trace_path == "synthetic.json"
    await pilot.pause(0.2)
    assert "ncu" in screen_text(app) and "not installed" in screen_text(app)


async def export(app: GputopApp, pilot: Any, key: str, tmp: Path) -> None:
    await press(pilot, key)
    assert isinstance(app.screen, PromptScreen)
    inp = app.screen.query_one(Input)
    target = tmp / "out.json"
    inp.value = str(target)
    await press(pilot, "enter")
    await wait_until(pilot, target.exists)
    await wait_until(pilot, lambda: target.stat().st_size > 0)
    assert '"command": "summary"' in target.read_text()


async def panel(app: GputopApp, pilot: Any, key: str, name: str) -> None:
    main = _main(app)
    await press(pilot, key)
    assert main.query_one("#switcher", ContentSwitcher).current == name
    assert main.panel == name
    await press(pilot, key)  # the same number again goes back to the details
    assert main.panel == "details" and timeline(app).has_focus


async def cycle(app: GputopApp, pilot: Any, key: str, step: int) -> None:
    main = _main(app)
    await press(pilot, key)
    assert main.panel == ("kernels" if step > 0 else "path")


async def toggle_path(app: GputopApp, pilot: Any, key: str) -> None:
    # a path built by hand over the synthetic trace (the analysis itself is checked in test_tui_critical_path.py)
    from gputop_trace.analysis.critical_path import path as critical_path
    from tests.critical_path_fixtures import synthetic_path

    main, tl = _main(app), timeline(app)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(critical_path, "critical_paths", lambda trace, **kw: [synthetic_path(trace)])
        await press(pilot, key)
        await wait_until(pilot, lambda: main.critical_path.shown)
    assert tl.path_marks is not None and tl.path_marks.strip_spans(0, 0) == [(400, 600, 3, True)]
    await press(pilot, key)
    assert not main.critical_path.shown and tl.path_marks is None


async def back(app: GputopApp, pilot: Any, key: str) -> None:
    main = _main(app)
    await press(pilot, "1")
    assert main.panel == "kernels"
    await press(pilot, key)
    assert main.panel == "details" and timeline(app).has_focus
    main.search_pattern = "tiny"
    await press(pilot, key)
    assert main.search_pattern == ""


async def scroll_details(app: GputopApp, pilot: Any, key: str, direction: int) -> None:
    from gputop_trace.tui.widgets.details_pane import DetailsPane

    tl = timeline(app)
    tl.select(_events(app, "sgemm_big")[0])
    await pilot.pause()
    pane = _main(app).query_one(DetailsPane)
    if direction < 0:
        pane.scroll_end(animate=False)
        await pilot.pause()
    before = pane.scroll_y
    await press(pilot, key)
    assert (pane.scroll_y - before) * direction > 0


async def help_screen(app: GputopApp, pilot: Any, key: str) -> None:
    await press(pilot, key)
    assert isinstance(app.screen, HelpScreen)
    assert "Zoom in" in screen_text(app)
    await press(pilot, "escape")
    assert isinstance(app.screen, MainScreen)


async def quit_app(app: GputopApp, pilot: Any, key: str) -> None:
    await press(pilot, key)
    await wait_until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0


async def compare_ranks(app: GputopApp, pilot: Any, key: str) -> None:
    # the synthetic trace has one rank: the key says so instead of opening an empty comparison (the two-rank
    # behaviour is checked key by key in test_tui_ranks.py)
    await press(pilot, key)
    assert isinstance(app.screen, MainScreen)
    assert any("one rank" in n.message for n in app._notifications)


async def palette(app: GputopApp, pilot: Any, key: str) -> None:
    from textual.command import CommandPalette

    await press(pilot, key)
    assert isinstance(app.screen, CommandPalette)
    await press(pilot, *"Panel: Kernels")
    await pilot.pause(0.3)
    await press(pilot, "enter")
    await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
    assert _main(app).panel == "kernels"


CHECKS: dict[str, Callable[..., Awaitable[None]]] = {
    "zoom(0.5)": zoom_in,
    "zoom(2.0)": zoom_out,
    "pan(-0.25)": lambda a, p, k: pan(a, p, k, -1),
    "pan(0.25)": lambda a, p, k: pan(a, p, k, 1),
    "line(1)": lambda a, p, k: line_move(a, p, k, 1),
    "line(-1)": lambda a, p, k: line_move(a, p, k, -1),
    "line(10)": lambda a, p, k: line_move(a, p, k, 10),
    "line(-10)": lambda a, p, k: line_move(a, p, k, -10),
    "fit": fit,
    "zoom_selection": zoom_selection,
    "step_event(-1)": lambda a, p, k: step_event(a, p, k, -1),
    "step_event(1)": lambda a, p, k: step_event(a, p, k, 1),
    "instance(1)": lambda a, p, k: instance(a, p, k, 1),
    "instance(-1)": lambda a, p, k: instance(a, p, k, -1),
    "cursor(-1)": lambda a, p, k: cursor(a, p, k, -1),
    "cursor(1)": lambda a, p, k: cursor(a, p, k, 1),
    "select": select,
    "fold": fold,
    "follow_flow": follow_flow,
    "search": search,
    "drilldown": drilldown,
    "export": export,
    "panel('kernels')": lambda a, p, k: panel(a, p, k, "kernels"),
    "panel('gaps')": lambda a, p, k: panel(a, p, k, "gaps"),
    "panel('transfers')": lambda a, p, k: panel(a, p, k, "transfers"),
    "panel('ranges')": lambda a, p, k: panel(a, p, k, "ranges"),
    "panel('drilldown')": lambda a, p, k: panel(a, p, k, "drilldown"),
    "panel('findings')": lambda a, p, k: panel(a, p, k, "findings"),
    "panel('ranks')": lambda a, p, k: panel(a, p, k, "ranks"),
    "panel('ops')": lambda a, p, k: panel(a, p, k, "ops"),
    "panel('path')": lambda a, p, k: panel(a, p, k, "path"),
    "toggle_path": toggle_path,
    "compare_ranks": compare_ranks,
    "cycle_panel(1)": lambda a, p, k: cycle(a, p, k, 1),
    "cycle_panel(-1)": lambda a, p, k: cycle(a, p, k, -1),
    "back": back,
    "scroll_details(1)": lambda a, p, k: scroll_details(a, p, k, 1),
    "scroll_details(-1)": lambda a, p, k: scroll_details(a, p, k, -1),
    "help": help_screen,
    "quit_app": quit_app,
    # Textual's own ctrl+q ("quit") shares the help's Quit line with q and ctrl+c: it is listed, and checked, under
    # quit_app
    "command_palette": palette,
}


def _timeline_help() -> list[tuple[str, str]]:
    """(action, key) for every key the help screen lists with the timeline focused."""

    async def body() -> list[tuple[str, str]]:
        app = GputopApp(["synthetic.json"], trace=synthetic_trace())
        async with app.run_test(size=SIZE) as pilot:
            main = await wait_loaded(app, pilot)
            return [(e.action, k) for sec in main.help_sections() for e in sec.entries for k in e.raw_keys]

    return run(body())


HELP = _timeline_help()


def test_every_key_in_the_help_has_a_check() -> None:
    listed = {action for action, _ in HELP}
    assert listed == set(CHECKS), f"untested: {listed - set(CHECKS)}, stale checks: {set(CHECKS) - listed}"


@app_test
async def test_footer_shows_only_keys_from_the_help() -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot)
        shown = {b.binding.action for b in main.active_bindings.values() if b.binding.show}
        assert shown <= {action for action, _ in HELP}
        footer = screen_text(app).splitlines()[-1]
        for label in ("Zoom in", "Search", "Help", "Quit", "palette"):
            assert label in footer


@pytest.mark.parametrize(("action", "key"), HELP, ids=[f"{a}-{k}" for a, k in HELP])
@app_test
async def test_key_does_what_the_help_says(
    action: str, key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUTOP_NCU", str(tmp_path / "no-ncu-here"))

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        check = CHECKS[action]
        if action == "export":
            await export(app, pilot, key, tmp_path)
        else:
            await check(app, pilot, key)


@app_test
async def test_kernels_panel_keys() -> None:
    """The keys the help lists while the Kernels table has the keyboard."""

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(100, 30)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "1")
        kt = main.query_one(KernelTable)
        entries = {e.action: e for sec in main.help_sections() for e in sec.entries}
        for action in ("row(1)", "row(-1)", "focus_filter", "cycle_sort", "reverse_sort"):
            assert action in entries, action
        table = kt.table
        assert table.has_focus
        first = kt.current_item()
        assert first is not None and first.name == "sgemm_big"  # largest total first
        await press(pilot, "j")
        assert table.cursor_row == 1
        await press(pilot, "k")
        assert table.cursor_row == 0
        await press(pilot, "o")
        current = kt.current_item()
        assert kt.sort == "count" and current is not None and current.name == "tiny"
        await press(pilot, "r")
        current = kt.current_item()
        assert not kt.descending and current is not None and current.name != "tiny"
        await press(pilot, "slash")
        assert kt.query_one(Input).has_focus
        await press(pilot, *"vector")
        assert [kt.items[i].name for i in kt.shown] == ["vectorized_elementwise_kernel"]
        await press(pilot, "escape")  # leaves the filter, keeps it
        assert table.has_focus and len(kt.shown) == 1
        await press(pilot, "enter")  # jump to the kernel's first launch
        assert app.trace is not None
        assert app.trace.event_name(timeline(app).selected) == "vectorized_elementwise_kernel"
        await press(pilot, "escape")
        assert main.panel == "details" and timeline(app).has_focus
        # the table's own keys (Textual's DataTable) are listed too, and work
        await press(pilot, "1", "escape", "escape")
        assert main.panel == "details"


@pytest.mark.parametrize("opener", ["ctrl+p", "question_mark", "slash", "e", "1", "5"])
@app_test
async def test_escape_then_keys_and_q_still_work(opener: str) -> None:
    """No focus trap: open something, Esc out of it, the timeline keys work, q quits with 0."""

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        await press(pilot, opener)
        await pilot.pause(0.1)
        await press(pilot, "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert _main(app).panel == "details"
        span = tl.t1 - tl.t0
        await press(pilot, "w")
        assert tl.t1 - tl.t0 == span // 2
        await press(pilot, "q")
        await wait_until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0


@app_test
async def test_ctrl_c_quits_from_a_text_field() -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "slash")
        assert isinstance(app.screen, PromptScreen)
        await press(pilot, "q")  # types a q into the search field, does not quit
        assert app.return_code is None and app.screen.query_one(Input).value == "q"
        await press(pilot, "ctrl+c")
        await wait_until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0


@app_test
async def test_table_cursor_keys_move_the_kernels_table() -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(100, 30)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "1")
        table = main.query_one(KernelTable).query_one(DataTable)
        await press(pilot, "down")
        assert table.cursor_row == 1
        await press(pilot, "up")
        assert table.cursor_row == 0
        await press(pilot, "ctrl+end")
        assert table.cursor_row == table.row_count - 1
        await press(pilot, "ctrl+home")
        assert table.cursor_row == 0
