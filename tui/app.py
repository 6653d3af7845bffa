"""``gputop-trace view``: the Textual app. It loads the trace in a worker behind a progress screen, prepares the
timeline lookups there too, then shows the main screen and runs the analyses in another worker, filling the
panels as results arrive. The UI thread never parses, never scans all events and never waits on I/O.

Load errors appear in a dialog with exactly the text the command line prints; closing it exits with the same
code (2 for bad input).

Given a fleet (``gputop-trace view fleet.parquet``) the app starts on the fleet screen instead; Enter on a rank
loads that rank's trace as above, and Esc on the timeline (with nothing left to back out of) returns to the
fleet. Every load has a token; results of a load left behind are dropped."""

from __future__ import annotations

import gc
import os
import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import App
from textual.binding import BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, get_current_worker

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.model.trace import Trace, python_left_out
from gputop_trace.safe_text import clean
from gputop_trace.tui.analysis_results import AnalysisResults
from gputop_trace.tui.app_base import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    MEMORY_MESSAGE,
    PROGRESS_INTERVAL_S,
    AppBase,
    cli_error_text,
    internal_error_message,
    print_debug_traceback,
)
from gputop_trace.tui.commands import TraceCommands
from gputop_trace.tui.keymap import quit_bindings
from gputop_trace.tui.messages import (
    AnalysesDone,
    AnalysisFailed,
    AnalysisResult,
    CriticalPathReady,
    FindingsReady,
    GapsReady,
    KernelsReady,
    LoadProgress,
    NamesReady,
    OpsReady,
    OverviewReady,
    RangeNamesReady,
    RangesReady,
    RanksReady,
    TraceLoaded,
    TransfersReady,
)
from gputop_trace.tui.screens.loading import LoadingScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.units import plural

if TYPE_CHECKING:
    from gputop_trace.fleet.parquet import FleetFile
    from gputop_trace.load.background import BackgroundLoad
    from gputop_trace.tui.screens.fleet import FleetScreen
    from gputop_trace.tui.view.prepared import PreparedView

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "MEMORY_MESSAGE",
    "PROGRESS_INTERVAL_S",
    "GputopApp",
    "cli_error_text",
    "internal_error_message",
]


class GputopApp(AppBase):
    """The trace browser."""

    TITLE = "gputop-trace"
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {TraceCommands}
    ENABLE_COMMAND_PALETTE = True

    BINDINGS: ClassVar[list[BindingType]] = quit_bindings("q")

    def __init__(
        self,
        paths: list[str],
        *,
        analyses: bool = True,
        trace: Trace | None = None,
        fleet: FleetFile | None = None,
        max_memory: int | None = None,
        use_cache: bool = True,
        include_python: bool = True,
        inductor_dir: str | None = None,
        background: BackgroundLoad[PreparedView] | None = None,
    ) -> None:
        """``paths`` are loaded in a worker; ``background`` is their load already started (``view`` starts it
        before importing the app), taken over when its paths and options are these; ``trace`` (already loaded, by
        ``view A B`` or a benchmark) skips the reading; ``fleet`` starts on the fleet screen instead, loading a
        rank's trace when it is opened there;
        ``max_memory`` (bytes) replaces the available memory in the check made before loading;
        ``use_cache=False`` parses again (``--no-cache``); ``include_python=False`` leaves out ``python_function``
        events (``--no-python``) until the palette's "Load Python stack events" asks for them; ``inductor_dir``
        is torch.compile's debug output (``--inductor-dir``), attached to the trace once it is loaded."""
        super().__init__()
        self.fleet = fleet
        self.load_token = 0
        self.paths = list(paths) if fleet is None else []
        self.max_memory = max_memory
        self.use_cache = use_cache
        self.include_python = include_python
        self.inductor_dir = inductor_dir
        self._given_trace = trace
        self._background = background
        self.run_analyses_after_load = analyses
        self.data: TimelineData | None = None
        self.load_seconds = 0.0
        self.first_screen_at: float | None = None
        self.analyses_done = False
        #: the analyses' results for the trace shown, as they arrive
        self.results = AnalysisResults()
        self.fleet_rank: int | None = None
        self.critical_path_started = False
        self._started = time.perf_counter()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A notification whose text is never read as markup (``markup`` is ignored): notifications carry names
        from the trace, warnings quoting the file and paths the user typed, which must show as they are. It
        replaces the one shown: toasts never stack up over the screen."""
        self.clear_notifications()
        super().notify(clean(message), title=clean(title), severity=severity, timeout=timeout, markup=False)

    # ---- loading ---------------------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen[Any]:
        """The fleet screen at the bottom of the stack when there is a fleet (Esc there quits)."""
        if self.fleet is not None:
            from gputop_trace.tui.screens.fleet import FleetScreen

            return FleetScreen(self.fleet)
        return super().get_default_screen()

    def on_mount(self) -> None:
        if self.fleet is not None:
            return
        # no progress screen for a trace that ``view`` has already loaded and prepared while the app was imported
        # (its frame only delayed the first screen); the main screen (or the error) takes the default screen's place
        if self._background is None or not self._background.wait(0):
            self.push_screen(LoadingScreen(self.paths))
        self.load_trace()

    def _forget_trace(self) -> None:
        """Drop the trace shown and everything computed from it; later results of its workers are ignored."""
        self.workers.cancel_group(self, "load")
        self.workers.cancel_group(self, "analyses")
        self.workers.cancel_group(self, "critical_path")
        self.critical_path_started = False
        self.load_token += 1
        self.trace = None
        self.data = None
        self._given_trace = None
        self.results = AnalysisResults()
        self.analyses_done = False

    def on_fleet_screen_open_rank(self, message: FleetScreen.OpenRank) -> None:
        """Enter on the fleet screen: load that rank's trace and show it."""
        message.stop()
        path = message.path
        if not os.path.exists(path):
            self.notify(
                clean(
                    f"Rank {message.rank}'s trace is not at {path}: the fleet file lists the paths where the fleet "
                    "ran; open the trace from where it lies (gputop-trace view PATH)."
                ),
                title="Trace not found",
                severity="warning",
                timeout=8,
            )
            return
        self._forget_trace()
        self.paths = [path]
        self.fleet_rank = message.rank
        self.push_screen(LoadingScreen(self.paths))
        self.load_trace()

    def load_python_events(self) -> None:
        """Load the trace again with the ``python_function`` events that ``--no-python`` left out."""
        if self.include_python or not self.paths:
            return
        self._forget_trace()
        self.include_python = True
        self.switch_screen(LoadingScreen(self.paths))
        self.load_trace()

    def back_to_fleet(self) -> bool:
        """Close the rank's trace and show the fleet screen again (False when there is no fleet)."""
        if self.fleet is None:
            return False
        from gputop_trace.tui.screens.fleet import FleetScreen

        if not any(isinstance(s, FleetScreen) for s in self.screen_stack):
            return False
        self._forget_trace()
        self.paths = []
        while not isinstance(self.screen, FleetScreen):
            self.pop_screen()
        return True

    def cancel_load(self) -> None:
        """Esc / q while a trace loads: back to the fleet when it was opened from one, else quit (code 130)."""
        if not self.back_to_fleet():
            super().cancel_load()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_trace(self) -> None:
        """Load (on the thread of a :class:`BackgroundLoad`, the command line's load path; the one ``view`` started
        before the app, when it is for these paths), prepare the timeline, index launch flows; post the result.
        What the load raises is shown by :meth:`AppBase.worker_failed`."""
        worker = get_current_worker()
        token = self.load_token
        counts = [0, 0, 0]

        def step(what: str) -> None:
            if worker.is_cancelled:
                raise LoadCancelled()
            self.post_message(LoadProgress(counts[0], counts[1], counts[2], what))

        t0 = time.perf_counter()
        pending, self._background = self._background, None
        ready: PreparedView | None = None
        if self._given_trace is not None:
            trace = self._given_trace
        else:
            pending = self._take_over_load(pending)
            while not pending.wait(PROGRESS_INTERVAL_S):
                if worker.is_cancelled:
                    pending.cancel()
                    return
                self.post_message(LoadProgress(*pending.progress, "reading"))
            trace = pending.result()
            # prepared on the load's thread by ``view`` (cli/view.py), with this app's inductor_dir
            ready = pending.then_result()
        if ready is None:
            # imported once the load has finished: while it runs, its threads import the parser (see prepared.py)
            from gputop_trace.tui.view.prepared import prepare_view

            counts[:] = [*pending.progress[:2], len(trace)] if pending is not None else [0, 0, len(trace)]
            ready = prepare_view(trace, self.inductor_dir, step=step)
        self.post_message(TraceLoaded(ready.trace, ready.data, ready.flows, time.perf_counter() - t0, token))

    def _take_over_load(self, pending: BackgroundLoad[PreparedView] | None) -> BackgroundLoad[PreparedView]:
        """``pending`` when it loads this app's paths with its options, else a new load of them (``pending``
        cancelled)."""
        from gputop_trace.load.background import BackgroundLoad

        use_cache, include_python = self.use_cache, self.include_python
        if pending is not None and pending.matches(self.paths, use_cache=use_cache, include_python=include_python):
            return pending
        if pending is not None:
            pending.cancel()
        return BackgroundLoad(
            list(self.paths), max_memory=self.max_memory, use_cache=use_cache, include_python=include_python
        )

    def load_error_closed(self, exit_code: int) -> None:
        """The load's error dialog was closed: back to the fleet when the trace was opened from one, else exit
        with the command line's code."""
        if not self.back_to_fleet():
            super().load_error_closed(exit_code)

    def on_trace_loaded(self, message: TraceLoaded) -> None:
        if message.token != self.load_token:
            return
        self.trace = message.trace
        self.data = message.data
        self.load_seconds = message.seconds
        # a palette or dialog opened while loading closes: the main screen takes the loading screen's place
        loading_below = any(isinstance(s, LoadingScreen) for s in self.screen_stack)
        while loading_below and not isinstance(self.screen, LoadingScreen):
            self.pop_screen()
        main = MainScreen(message.trace, message.data, message.flows, self.paths)
        if loading_below:
            self.switch_screen(main)
        else:  # loaded before the app started (on_mount): nothing to replace
            self.push_screen(main)
        self.call_after_refresh(self._first_screen_shown)
        self._notify_loaded(message.trace)

    def _notify_loaded(self, trace: Trace) -> None:
        """One notification for what the user should know once the trace is shown (warnings while loading,
        Python events left out, the fleet rank), as notifications replace each other."""
        parts: list[str] = []
        title = ""
        severity: SeverityLevel = "information"
        warnings = trace.meta.warnings
        if warnings:
            first = clean(warnings[0])
            first = first if len(first) <= 90 else first[:89] + "…"
            more = f" (+{len(warnings) - 1} more)" if len(warnings) > 1 else ""
            parts.append(f"{first}{more} — all warnings are in panel 6 (Findings).")
            title = f"{plural(len(warnings), 'warning')} while loading"
            severity = "warning"
        left_out = python_left_out(trace)
        if left_out:
            parts.append(
                f"{left_out:,} Python stack events (python_function) were left out (--no-python). To see them: "
                "Ctrl+P, Load Python stack events."
            )
        if self.fleet is not None:
            parts.append(
                f"Rank {self.fleet_rank} of the fleet. Esc (with nothing selected and no panel open) goes back to "
                "the fleet."
            )
        if parts:
            self.notify("\n".join(parts), title=title, severity=severity, timeout=6)

    def _first_screen_shown(self) -> None:
        self.first_screen_at = time.perf_counter() - self._started
        # the loaded trace and its lookups live as long as the app: keep them out of the garbage collector's
        # full passes, which otherwise stall a keypress now and then (tens of ms on a large trace)
        gc.freeze()
        # the analyses start once the first screen is drawn: their thread holds the GIL most of the time, and
        # started with the main screen they held back its first frame (by about 0.4 s on a 50 MB trace)
        if self.run_analyses_after_load and self.trace is not None:
            self.run_analyses(self.trace)

    # ---- analyses --------------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="analyses")
    def run_analyses(self, trace: Trace) -> None:
        """Build the name index and run the analyses (:class:`TraceAnalyses`), posting each result as soon as it
        is ready (the panel that needs a result shows it; one that failed shows the error, and the others still
        run)."""
        from gputop_trace.tui.analysis_jobs import TraceAnalyses

        worker = get_current_worker()
        assert self.data is not None
        analyses = TraceAnalyses(trace, self.data, self.load_token)
        for analysis, job in analyses.jobs():
            if worker.is_cancelled:
                return
            message: AnalysisResult | AnalysisFailed
            try:
                message = job()
            except Exception as e:  # shown in the panel that needed it, never swallowed
                message = AnalysisFailed(analysis, internal_error_message(e), analyses.token)
            if worker.is_cancelled:
                return
            self.post_message(message)
        self.post_message(AnalysesDone(analyses.summary(), analyses.token))

    def want_critical_path(self) -> bool:
        """Start computing every step's critical path, once per trace, when the user first asks for it (``p``,
        panel 9): it is not one of the analyses run after loading, which every user waits on. True when it is
        started now, False when it was already (or there is no trace yet)."""
        if self.trace is None or self.critical_path_started:
            return False
        self.critical_path_started = True
        self.run_critical_path(self.trace)
        return True

    @work(thread=True, exclusive=True, group="critical_path", exit_on_error=False)
    def run_critical_path(self, trace: Trace) -> None:
        """Every step's critical path (``analysis.critical_path``), posted as :class:`CriticalPathReady`; what it
        raises is shown by :meth:`worker_failed`."""
        from gputop_trace.analysis.critical_path.path import critical_paths

        worker = get_current_worker()
        token = self.load_token
        paths = critical_paths(trace)
        if not worker.is_cancelled:
            self.post_message(CriticalPathReady(paths, token))

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        """A worker raised: for the critical path, the reason (a trace it cannot analyse) or the command line's
        message for a bug, shown as that analysis's failure; for a load, the base's dialog."""
        if worker.group != "critical_path":
            super().worker_failed(worker, error)
            return
        if isinstance(error, TraceError):
            text = clean(error.message)
        else:
            print_debug_traceback(error)
            text = internal_error_message(error)
        self.post_message(AnalysisFailed(CriticalPathReady, text, self.load_token))

    @on(NamesReady)
    @on(RangeNamesReady)
    @on(KernelsReady)
    @on(GapsReady)
    @on(TransfersReady)
    @on(FindingsReady)
    @on(OverviewReady)
    @on(RangesReady)
    @on(RanksReady)
    @on(OpsReady)
    @on(CriticalPathReady)
    def _analysis_result(self, message: AnalysisResult) -> None:
        """An analysis's result: kept, and shown by the main screen (once its panels are mounted)."""
        if message.token != self.load_token:
            return
        message.keep(self.results)
        main = self.main_screen
        if main is not None:
            main.post_message(message)

    @on(AnalysisFailed)
    def _analysis_failed(self, message: AnalysisFailed) -> None:
        """An analysis failed: its text kept, and shown by the main screen."""
        if message.token != self.load_token:
            return
        self.results.failures[message.analysis.name] = message.text
        main = self.main_screen
        if main is not None:
            main.post_message(message)

    @on(AnalysesDone)
    def _analyses_done(self, message: AnalysesDone) -> None:
        """Every analysis has posted: done once the panels show every result."""
        if message.token != self.load_token:
            return
        self.results.summary = message.summary
        main = self.main_screen
        if main is not None and main.is_mounted:
            main.when_panels(self._analyses_finished)
        else:
            self._analyses_finished()

    def _analyses_finished(self) -> None:
        self.analyses_done = True
        gc.freeze()  # the analyses' results too (see _first_screen_shown)

    @property
    def main_screen(self) -> MainScreen | None:
        """The main screen, once the trace is loaded."""
        for s in self.screen_stack:
            if isinstance(s, MainScreen):
                return s
        return None
