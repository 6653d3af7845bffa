"""``gputop-trace view fleet.parquet``: the app starts on the fleet screen; Enter on a rank opens its trace in the
timeline, Esc comes back to the fleet (and a second rank opens cleanly); missing and unreadable traces, Esc while
loading and other Parquet files are handled (Pilot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from gputop_trace.cli.view import make_app
from gputop_trace.errors import TraceError
from gputop_trace.fleet.parquet import FleetFile
from gputop_trace.load.loader import load_paths
from gputop_trace.load.samples import default_sample
from gputop_trace.tui.analysis_results import AnalysisResults
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.messages import KernelsReady, TraceLoaded
from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.fleet import FleetScreen
from gputop_trace.tui.screens.loading import LoadingScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.view.navigation import FlowIndex
from gputop_trace.tui.view.timeline_data import prepare_timeline
from tests.conftest import corpus_file
from tests.tui_helpers import app_test, press, screen_text, timeline, wait_text, wait_until

SIZE = (100, 30)


def _row(rank: int, path: str, late: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "path": path,
        "step_ns": [30_000_000, 31_000_000],
        "mean_step_ns": 30_500_000,
        "busy_pct": 60.0,
        "collective_wait_ns": 0,
        "arrival_late_ns": late,
        "imposed_wait_ns": 0,
    }


def _fleet(tmp_path: Path) -> FleetFile:
    """Rank 0: the bundled sample (loads); rank 1: not a trace; rank 2: a path that is not there. Sorted by lateness
    the screen lists 2, 1, 0."""
    bad = tmp_path / "rank1.json"
    bad.write_text("this is not a trace")
    rows = [
        _row(0, default_sample(), 0),
        _row(1, str(bad), 1_000),
        _row(2, str(tmp_path / "gone" / "rank2.json"), 2_000),
    ]
    return FleetFile(path=str(tmp_path / "fleet.parquet"), rows=rows, errors=[], doc={"fleet": {}, "findings": []})


def _fleet_screen(app: GputopApp) -> FleetScreen:
    assert isinstance(app.screen, FleetScreen)
    return app.screen


def _main_screen(app: GputopApp) -> MainScreen:
    assert isinstance(app.screen, MainScreen)
    return app.screen


async def _open(app: GputopApp, pilot: Any, rank: int) -> None:
    screen = _fleet_screen(app)
    screen.query_one(DataTable).move_cursor(row=[int(r["rank"]) for r in screen.order].index(rank))
    await press(pilot, "enter")


@app_test
async def test_enter_opens_the_ranks_trace_and_esc_comes_back(tmp_path: Path) -> None:
    app = GputopApp([], fleet=_fleet(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert len(app.screen_stack) == 1 and "fleet.parquet: 3 ranks" in screen_text(app)
        await _open(app, pilot, 0)
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.analyses_done)
        assert app.paths == [default_sample()] and app.trace is not None
        assert "Rank 0 of the fleet" in " ".join(n.message for n in app._notifications)
        main = _main_screen(app)
        await press(pilot, "1")  # Esc backs out of the panel first …
        await press(pilot, "escape")
        assert app.screen is main and main.panel == "details"
        timeline(app).select(0)
        await press(pilot, "escape")  # … then the selection …
        assert app.screen is main and timeline(app).selected == -1
        await press(pilot, "escape")  # … then back to the fleet
        assert isinstance(app.screen, FleetScreen) and app.trace is None and app.results == AnalysisResults()
        assert [int(r["rank"]) for r in _fleet_screen(app).order] == [2, 1, 0]
        # again: the rank opens afresh, with its own analyses
        await _open(app, pilot, 0)
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.analyses_done)
        assert app.screen is not main and app.trace is not None
        kernels = app.results.kernels
        assert kernels is not None
        assert all(len(r.events) and int(r.events.max()) < len(app.trace) for r in kernels)
        await press(pilot, "q")
        await wait_until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0


@app_test
async def test_the_palette_goes_back_to_the_fleet(tmp_path: Path) -> None:
    app = GputopApp([], fleet=_fleet(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _open(app, pilot, 0)
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        await press(pilot, "ctrl+p", *"Back to the fleet")
        await pilot.pause(0.3)
        await press(pilot, "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))


@app_test
async def test_a_missing_trace_is_said_and_the_fleet_stays(tmp_path: Path) -> None:
    app = GputopApp([], fleet=_fleet(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _open(app, pilot, 2)
        assert isinstance(app.screen, FleetScreen)
        assert any("Rank 2's trace is not at" in n.message for n in app._notifications)


@app_test
async def test_an_unreadable_trace_shows_the_error_then_the_fleet(tmp_path: Path) -> None:
    app = GputopApp([], fleet=_fleet(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _open(app, pilot, 1)
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorDialog))
        await wait_text(pilot, app, "gputop-trace: error:", "rank1.json")
        await press(pilot, "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        assert app.return_code is None and len(app.screen_stack) == 1


@app_test
async def test_esc_while_loading_goes_back_and_the_late_result_is_dropped(tmp_path: Path) -> None:
    app = GputopApp([], fleet=_fleet(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # open rank 0 and cancel in the same moment: the load worker may still finish and report its trace
        app.on_fleet_screen_open_rank(FleetScreen.OpenRank(default_sample(), 0))
        assert isinstance(app.screen, LoadingScreen)
        app.screen.action_cancel()  # what Esc does there
        assert isinstance(app.screen, FleetScreen)
        await wait_until(pilot, lambda: not any(w.group == "load" and not w.is_finished for w in app.workers))
        await pilot.pause(0.2)
        assert isinstance(app.screen, FleetScreen) and app.trace is None and app.return_code is None
        # what a load left behind might still deliver is dropped
        trace = load_paths([default_sample()])
        stale = app.load_token - 1
        app.post_message(TraceLoaded(trace, prepare_timeline(trace), FlowIndex(trace), 0.1, stale))
        app.post_message(KernelsReady([], stale))
        await pilot.pause(0.3)
        assert isinstance(app.screen, FleetScreen) and app.trace is None and app.results == AnalysisResults()


@app_test
async def test_q_on_the_fleet_quits_with_0(tmp_path: Path) -> None:
    app = GputopApp([], fleet=_fleet(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await press(pilot, "q")
        await wait_until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0


def test_view_routes_fleet_files_and_refuses_other_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    app = make_app([default_sample()])
    assert isinstance(app, GputopApp) and app.fleet is None and app.paths == [default_sample()]
    plain = tmp_path / "table.parquet"
    pq.write_table(pa.table({"x": [1]}), plain)
    with pytest.raises(TraceError, match="not one 'gputop-trace fleet --out' wrote"):
        make_app([str(plain)])
    with pytest.raises(TraceError, match="open it on its own"):
        make_app([str(plain), default_sample()])


@pytest.mark.corpus
@app_test
async def test_a_real_fleet_file_opens_the_straggler(tmp_path: Path) -> None:
    from gputop_trace.cli.main import main

    out = tmp_path / "ddp.parquet"
    assert main(["fleet", corpus_file("kineto/h200_ddp_2gpu"), "--executor", "local", "--out", str(out)]) == 0

    app = make_app([str(out)])
    assert isinstance(app, GputopApp) and app.fleet is not None
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = _fleet_screen(app)
        assert int(screen.order[0]["rank"]) == 1  # the latest first
        await press(pilot, "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.paths[0].endswith("rank1.pt.trace.json.gz") and app.fleet_rank == 1
        assert "rank1.pt.trace.json.gz" in screen_text(app).splitlines()[-2]
        await press(pilot, "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
