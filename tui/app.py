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
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import get_current_worker

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.model.trace import Trace, python_left_out
from gputop_trace.safe_text import clean
from gputop_trace.tui.commands import TraceCommands, system_commands
from gputop_trace.tui.keymap import quit_bindings
from gputop_trace.tui.messages import AnalysisFailed, AnalysisReady, LoadFailed, LoadProgress, TraceLoaded
from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.loading import LoadingScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.theme import use_gputop_themes
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.units import plural

if TYPE_CHECKING:
    from gputop_trace.fleet.parquet import FleetFile
    from gputop_trace.load.background import BackgroundLoad
    from gputop_trace.tui.screens.fleet import FleetScreen

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 2, 70, 130
#: how often the loading screen shows progress, in seconds: each update is redrawn on the UI thread, which holds
#: the GIL the parser needs (at 20 a second the UI took a fifth of the load's CPU time on a 50 MB trace)
PROGRESS_INTERVAL_S = 0.25


def cli_error_text(message: str) -> str:
    """The line the command line prints for an error (``gputop-trace: error: …``), as plain text."""
    return "gputop-trace: error: " + clean(message)


def internal_error_message(exc: BaseException) -> str:
    """The command line's message for a bug in this program."""
    return (
        f"internal error: {type(exc).__name__}: {exc}. This is a bug in gputop-trace; please report it with the "
        "command you ran (set GPUTOP_DEBUG=1 to print the traceback)."
    )


MEMORY_MESSAGE = (
    "Ran out of memory. The trace is larger than this machine can hold: close other programs, use a "
    "machine with more memory, or record a shorter profile (fewer steps, no with_stack)."
)


class GputopApp(App[int]):
    """The trace browser."""

    TITLE = "gputop-trace"
    CSS_PATH = "app.tcss"
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
        background: BackgroundLoad | None = None,
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
        use_gputop_themes(self)  # the palette's colours; monochrome under NO_COLOR
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
        self.trace: Trace | None = None
        self.data: TimelineData | None = None
        self.load_seconds = 0.0
        self.first_screen_at: float | None = None
        self.analyses_done = False
        self.results: dict[str, Any] = {}
        self.summary_analyses: Any = None  # report.summary.Analyses once every analysis is done (export)
        self.failures: dict[str, str] = {}
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

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Quit and a screenshot, in place of Textual's generic entries (:func:`system_commands`)."""
        return system_commands(self, self.action_quit_app)

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
        self.results = {}
        self.failures = {}
        self.analyses_done = False
        self.summary_analyses = None

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
            self.workers.cancel_group(self, "load")
            self.exit(EXIT_INTERRUPTED, return_code=EXIT_INTERRUPTED)

    @work(thread=True, exclusive=True, group="load")
    def load_trace(self) -> None:
        """Load (on the thread of a :class:`BackgroundLoad`, the command line's load path; the one ``view`` started
        before the app, when it is for these paths), prepare the timeline, index launch flows; post the result or
        the error. Progress is read from the load every :data:`PROGRESS_INTERVAL_S`."""
        from gputop_trace.load.background import BackgroundLoad

        worker = get_current_worker()
        token = self.load_token
        paths = list(self.paths)
        counts = [0, 0, 0]

        def step(what: str) -> None:
            if worker.is_cancelled:
                raise LoadCancelled()
            self.post_message(LoadProgress(counts[0], counts[1], counts[2], what))

        t0 = time.perf_counter()
        pending, self._background = self._background, None
        try:
            ready: object = None
            if self._given_trace is not None:
                trace = self._given_trace
            else:
                use_cache, include_python = self.use_cache, self.include_python
                if pending is None or not pending.matches(paths, use_cache=use_cache, include_python=include_python):
                    if pending is not None:
                        pending.cancel()
                    pending = BackgroundLoad(
                        paths, max_memory=self.max_memory, use_cache=use_cache, include_python=include_python
                    )
                while not pending.wait(PROGRESS_INTERVAL_S):
                    if worker.is_cancelled:
                        pending.cancel()
                        return
                    self.post_message(LoadProgress(*pending.progress, "reading"))
                trace = pending.result()
                # prepared on the load's thread by ``view`` (cli/view.py), with this app's inductor_dir
                ready = pending.then_result()
            # imported once the load has finished: while it runs, its threads import the parser (see prepared.py)
            from gputop_trace.tui.view.prepared import PreparedView, prepare_view

            if not isinstance(ready, PreparedView):
                counts[:] = [*pending.progress[:2], len(trace)] if pending is not None else [0, 0, len(trace)]
                ready = prepare_view(trace, self.inductor_dir, step=step)
        except LoadCancelled:
            return
        except TraceError as e:
            self.post_message(LoadFailed(cli_error_text(e.message), EXIT_BAD_INPUT, token))
            return
        except MemoryError:
            self.post_message(LoadFailed(cli_error_text(MEMORY_MESSAGE), EXIT_BAD_INPUT, token))
            return
        except Exception as e:  # a bug: say so as the command line would
            if os.environ.get("GPUTOP_DEBUG"):
                import traceback

                traceback.print_exc()
            self.post_message(LoadFailed(cli_error_text(internal_error_message(e)), EXIT_INTERNAL, token))
            return
        self.post_message(TraceLoaded(ready.trace, ready.data, ready.flows, time.perf_counter() - t0, token))

    def on_load_progress(self, message: LoadProgress) -> None:
        screen = self.screen
        if isinstance(screen, LoadingScreen):
            screen.show_progress(message.done, message.total, message.events, message.stage)

    def on_load_failed(self, message: LoadFailed) -> None:
        if message.token != self.load_token:
            return

        def close(_: None) -> None:
            if not self.back_to_fleet():
                self.exit(message.exit_code, return_code=message.exit_code)

        self.push_screen(ErrorDialog("Could not open the trace", message.text), close)

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
        """Build the name index and run the analyses, posting each result as soon as it is ready (the panel
        that needs a result shows it; one that failed shows the error)."""
        from gputop_trace.analysis.findings.assemble import find_findings
        from gputop_trace.analysis.gaps.detect import DEFAULT_THRESHOLD_NS, find_gaps
        from gputop_trace.analysis.kernels import kernel_table
        from gputop_trace.analysis.ranges import range_summary
        from gputop_trace.analysis.transfers import transfer_overlap
        from gputop_trace.tui.view.analysis_views import finding_items, gaps_view, transfers_view
        from gputop_trace.tui.view.navigation import NameIndex, range_names

        worker = get_current_worker()
        token = self.load_token
        data = self.data
        assert data is not None
        done: dict[str, Any] = {}

        def build_names() -> NameIndex:
            index = NameIndex(trace)
            done["names"] = index
            return index

        def gaps() -> Any:
            done["gaps"] = find_gaps(trace, DEFAULT_THRESHOLD_NS)
            return gaps_view(data, done["gaps"])

        def transfers() -> Any:
            done["transfers"] = transfer_overlap(trace)
            return transfers_view(done["transfers"])

        def findings() -> Any:
            done["findings"] = find_findings(
                trace, gap_threshold_ns=DEFAULT_THRESHOLD_NS, gaps=done.get("gaps"), transfers=done.get("transfers")
            )
            done["finding_items"] = finding_items(done["findings"])
            return done["finding_items"]

        def overview() -> Any:
            from gputop_trace.analysis.busy import device_busy
            from gputop_trace.report.summary import steps_json
            from gputop_trace.tui.view.overview import Overview

            return Overview(device_busy(trace), steps_json(trace), done.get("finding_items", []))

        def ranges() -> Any:
            done["ranges"] = range_summary(trace)
            return done["ranges"]

        def ops() -> Any:
            from gputop_trace.tui.view.ops_view import ops_view

            return ops_view(trace)

        def ranks() -> Any:
            from gputop_trace.tui.view.ranks_view import ranks_view

            return ranks_view(trace, set(data.util))

        jobs: list[tuple[str, Any]] = [
            ("names", build_names),
            ("range_names", lambda: range_names(trace, done["names"]) if "names" in done else []),
            ("kernels", lambda: kernel_table(trace)),
            ("gaps", gaps),
            ("transfers", transfers),
            ("findings", findings),
            ("overview", overview),
            ("ranges", ranges),
            ("ranks", ranks),
            ("ops", ops),
        ]
        for name, job in jobs:
            if worker.is_cancelled:
                return
            try:
                result = job()
            except Exception as e:  # shown in the panel that needed it, never swallowed
                self.post_message(AnalysisFailed(name, internal_error_message(e), token))
                continue
            if worker.is_cancelled:
                return
            self.post_message(AnalysisReady(name, result, token))
        if {"gaps", "transfers", "findings", "ranges"} <= set(done):
            from gputop_trace.report.summary import Analyses

            self.summary_analyses = Analyses(
                done["gaps"], done["transfers"], done["findings"], done["ranges"], DEFAULT_THRESHOLD_NS
            )
        self.post_message(AnalysisReady("done", None, token))

    def want_critical_path(self) -> bool:
        """Start computing every step's critical path, once per trace, when the user first asks for it (``p``,
        panel 9): it is not one of the analyses run after loading, which every user waits on. True when it is
        started now, False when it was already (or there is no trace yet)."""
        if self.trace is None or self.critical_path_started:
            return False
        self.critical_path_started = True
        self.run_critical_path(self.trace)
        return True

    @work(thread=True, exclusive=True, group="critical_path")
    def run_critical_path(self, trace: Trace) -> None:
        """Every step's critical path (``analysis.critical_path``), posted as the ``critical_path`` result: the
        list of ``StepPath``; a trace it cannot analyse posts the reason, a bug the command line's message."""
        from gputop_trace.analysis.critical_path.path import critical_paths

        worker = get_current_worker()
        token = self.load_token
        try:
            paths = critical_paths(trace)
        except TraceError as e:
            self.post_message(AnalysisFailed("critical_path", clean(e.message), token))
            return
        except Exception as e:  # a bug: say so as the command line would
            if os.environ.get("GPUTOP_DEBUG"):
                import traceback

                traceback.print_exc()
            self.post_message(AnalysisFailed("critical_path", internal_error_message(e), token))
            return
        if not worker.is_cancelled:
            self.post_message(AnalysisReady("critical_path", paths, token))

    def on_analysis_ready(self, message: AnalysisReady) -> None:
        if message.token != self.load_token:
            return
        if message.name == "done":
            main = self.main_screen
            if main is not None and main.is_mounted:
                main.when_panels(self._analyses_finished)  # once the panels show every result
            else:
                self._analyses_finished()
            return
        self.results[message.name] = message.result
        main = self.main_screen
        if main is not None and main.is_mounted:
            main.on_analysis_ready(message)

    def _analyses_finished(self) -> None:
        self.analyses_done = True
        gc.freeze()  # the analyses' results too (see _first_screen_shown)

    def on_analysis_failed(self, message: AnalysisFailed) -> None:
        if message.token != self.load_token:
            return
        self.failures[message.name] = message.text
        main = self.main_screen
        if main is not None and main.is_mounted:
            main.on_analysis_failed(message)

    # ---- quitting --------------------------------------------------------------------------------------------
    def action_quit_app(self) -> None:
        """Quit (q, Ctrl+C). While loading, this cancels the load (exit code 130, as the command line)."""
        if any(isinstance(s, LoadingScreen) for s in self.screen_stack):
            self.workers.cancel_group(self, "load")
            self.exit(EXIT_INTERRUPTED, return_code=EXIT_INTERRUPTED)
            return
        self.exit(EXIT_OK, return_code=EXIT_OK)

    @property
    def main_screen(self) -> MainScreen | None:
        """The main screen, once the trace is loaded."""
        for s in self.screen_stack:
            if isinstance(s, MainScreen):
                return s
        return None
