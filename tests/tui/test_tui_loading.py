"""Issue 20.15, opening a trace: the app's load is the command line's (:func:`load_paths`, once), ``view`` starts it
before the app is imported and the app takes it over, the loading screen shows bytes and events as the load
reports them (at 80×24 and 160×48), and the analyses wait for the first screen."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from gputop_trace.errors import LoadCancelled
from gputop_trace.load import loader, resources
from gputop_trace.load.samples import default_sample
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.source import Progress
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.loading import LoadingScreen
from tests.tui_helpers import app_test, run, screen_text, synthetic_trace, wait_loaded, wait_text, wait_until

if TYPE_CHECKING:
    from gputop_trace.tui.view.prepared import PreparedView

SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES)
def test_loading_screen_shows_the_bytes_and_events_of_the_load(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    trace = synthetic_trace()

    def slow_load(paths: list[str], *, progress: Progress | None = None, **options: Any) -> Trace:
        assert progress is not None
        progress(3 << 20, 48 << 20, 4_593)
        release.wait(20)
        progress(48 << 20, 48 << 20, len(trace))
        return trace

    monkeypatch.setattr(loader, "load_paths", slow_load)
    monkeypatch.setattr(resources, "check_paths", lambda *a: None)

    async def body() -> None:
        app = GputopApp(["big.json"], analyses=False)
        async with app.run_test(size=size) as pilot:
            text = await wait_text(pilot, app, "4,593 events")
            assert isinstance(app.screen, LoadingScreen)
            assert "reading: 3.0 MiB of 48.0 MiB · 4,593 events" in text
            release.set()
            await wait_loaded(app, pilot, analyses=False)
            assert app.trace is trace

    try:
        run(body())
    finally:
        release.set()


@app_test
async def test_view_starts_the_load_before_the_app_and_the_app_takes_it_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace is read once, on the load's own thread, started by ``make_app`` (before the app is built)."""
    from gputop_trace.cli.view import make_app

    calls: list[str] = []
    real = loader.load_paths

    def counting(paths: list[str], **options: Any) -> Trace:
        calls.append(threading.current_thread().name)
        return real(paths, **options)

    monkeypatch.setattr(loader, "load_paths", counting)

    app = make_app([default_sample()], use_cache=False)
    assert isinstance(app, GputopApp)
    background = app._background
    assert background is not None and background.paths == [default_sample()]
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot, analyses=False)
        assert calls == ["gputop-trace load"]  # once, on the load started by view
        assert app.trace is background.result()
        # the timeline was prepared on that thread too, while the app started: the app shows what it made
        prepared = background.then_result()
        assert prepared is not None and app.data is prepared.data and prepared.trace is app.trace


@app_test
async def test_a_trace_loaded_before_the_app_starts_opens_straight_on_the_same_first_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trace that ``view`` loaded and prepared before the app was imported (a small file) opens on the main screen
    without a frame of the loading screen, and that first screen reads exactly as the one the app's own load
    shows; q still quits with 0."""
    from gputop_trace.cli.view import make_app

    shown: list[str] = []
    real_init = LoadingScreen.__init__

    def spy(self: LoadingScreen, paths: list[str]) -> None:
        shown.append(paths[0])
        real_init(self, paths)

    monkeypatch.setattr(LoadingScreen, "__init__", spy)

    async def first_screen(app: GputopApp) -> str:
        app.run_analyses_after_load = False  # the first screen before any analysis arrives
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_loaded(app, pilot, analyses=False)
            await wait_until(pilot, lambda: app.first_screen_at is not None)
            text = screen_text(app)
            await pilot.press("q")
        assert app.return_code == 0
        return text

    early = make_app([default_sample()], use_cache=False)
    assert isinstance(early, GputopApp) and early._background is not None
    assert early._background.wait(60)  # loaded and prepared before the app runs
    direct = await first_screen(early)
    assert shown == []  # no loading screen
    own = await first_screen(GputopApp([default_sample()], use_cache=False))
    assert shown == [default_sample()]
    assert direct == own and "win " in direct and " ev" in direct


@app_test
async def test_a_bad_inductor_dir_given_to_view_is_the_command_lines_error(tmp_path: Any) -> None:
    """``view --inductor-dir`` on a folder without torch.compile output: the load's thread raises the command
    line's message, and the app shows it in its error dialog (closing it exits 2)."""
    from gputop_trace.cli.view import make_app
    from gputop_trace.tui.screens.dialogs import ErrorDialog

    app = make_app([default_sample()], use_cache=False, inductor_dir=str(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorDialog))
        await wait_text(pilot, app, "output_code.py")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 2


def test_a_load_for_other_options_is_not_taken_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """A background load started for other paths or options is cancelled, and the app loads what it was asked."""
    from gputop_trace.load.background import BackgroundLoad

    release = threading.Event()
    real = loader.load_paths
    seen: list[bool] = []

    def gated(paths: list[str], *, progress: Progress | None = None, **options: Any) -> Trace:
        seen.append(bool(options.get("include_python")))
        if options.get("include_python"):
            release.wait(20)
            if progress is not None:
                progress(1, 1, 0)  # cancelled by now: raises LoadCancelled
        return real(paths, progress=progress, **options)

    monkeypatch.setattr(loader, "load_paths", gated)
    stale: BackgroundLoad[PreparedView] = BackgroundLoad([default_sample()], use_cache=False, include_python=True)

    async def body() -> None:
        app = GputopApp([default_sample()], use_cache=False, include_python=False, background=stale)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(app, pilot, analyses=False)
            assert app.include_python is False and sorted(seen) == [False, True]
            release.set()
            await wait_until(pilot, lambda: stale.wait(0))
            with pytest.raises(LoadCancelled):
                stale.result()

    try:
        run(body())
    finally:
        release.set()


@app_test
async def test_analyses_start_once_the_first_screen_is_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[float | None] = []
    real = GputopApp.run_analyses

    def spy(self: GputopApp, trace: Trace) -> Any:
        started.append(self.first_screen_at)
        return real(self, trace)

    monkeypatch.setattr(GputopApp, "run_analyses", spy)

    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(app, pilot)
        assert len(started) == 1 and started[0] is not None
        assert "Where the time went" in screen_text(app)


@app_test
async def test_panels_are_built_after_the_first_screen_and_what_asked_for_them_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first screen is drawn before panels 1-9 exist (the details pane shows what it always shows there); a
    panel key and the analyses' results that arrive before the panels are mounted are not lost: once they are, the
    key's panel is shown with the results in it, in the order they came."""
    from gputop_trace.tui.screens.main import MainScreen
    from gputop_trace.tui.widgets.kernels_panel import KernelsPanel, KernelTable
    from gputop_trace.units import plural

    real = MainScreen.mount_panels
    held: list[MainScreen] = []

    def hold(self: MainScreen) -> None:  # the panels wait until the test lets them be built
        held.append(self)

    monkeypatch.setattr(MainScreen, "mount_panels", hold)

    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.first_screen_at is not None)
        main = app.screen
        assert isinstance(main, MainScreen) and not main.panels_ready
        assert not main.query(KernelsPanel)  # not built yet
        text = screen_text(app)
        assert "win " in text and " ev" in text and "Kernels" in text  # status bar and the panel tabs
        await wait_until(pilot, lambda: app.results.kernels is not None)  # an analysis result before the panels
        await pilot.press("1")
        await pilot.pause()
        assert main.panel == "details" and not app.analyses_done  # both wait for the panels
        assert held == [main]
        main.call_later(real, main)
        await wait_until(pilot, lambda: main.panels_ready and main.panel == "kernels")
        await wait_until(pilot, lambda: app.analyses_done)
        panel = main.query_one(KernelsPanel)
        assert panel.display and app.focused is not None and panel in app.focused.ancestors  # its table has the keys
        table = main.query_one(KernelTable)
        kernels = app.results.kernels
        assert kernels and table.items == kernels and table.table.row_count == len(kernels)
        assert plural(len(kernels), "kernel") in screen_text(app)
