"""The app for two runs (``gputop-trace diff --view BASE TEST``, ``gputop-trace view --diff BASE TEST``): both runs
are loaded and compared in a worker behind the progress screen, their timeline lookups prepared there too, then
the Diff view is shown. A side that cannot be read gets the command line's error, naming that side, in a dialog;
closing it exits with code 2."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from gputop_trace.analysis.diff.compare import RunDiff
from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.model.trace import Trace
from gputop_trace.tui.app import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    MEMORY_MESSAGE,
    PROGRESS_INTERVAL_S,
    cli_error_text,
    internal_error_message,
)
from gputop_trace.tui.commands import system_commands
from gputop_trace.tui.keymap import quit_bindings
from gputop_trace.tui.messages import LoadFailed, LoadProgress
from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.diff import DiffScreen
from gputop_trace.tui.screens.loading import LoadingScreen
from gputop_trace.tui.theme import use_gputop_themes
from gputop_trace.tui.view.timeline_data import TimelineData


class DiffReady(Message):
    """Both runs are loaded and compared."""

    def __init__(self, diff: RunDiff, data: tuple[TimelineData, TimelineData]) -> None:
        super().__init__()
        self.diff = diff
        self.data = data


class DiffApp(App[int]):
    """Two runs side by side."""

    TITLE = "gputop-trace diff"
    CSS_PATH = "app.tcss"

    BINDINGS: ClassVar[list[BindingType]] = quit_bindings("q,escape")

    def __init__(
        self,
        base: list[str],
        test: list[str],
        *,
        max_memory: int | None = None,
        use_cache: bool = True,
        include_python: bool = True,
        runs: tuple[Trace, Trace] | None = None,
    ) -> None:
        """``runs``: both sides already loaded (``view A B`` loads them to tell two runs from one job)."""
        super().__init__()
        use_gputop_themes(self)  # the palette's colours; monochrome under NO_COLOR
        self.base, self.test = list(base), list(test)
        self.runs = runs
        self.max_memory = max_memory
        self.use_cache = use_cache
        self.include_python = include_python
        self.diff: RunDiff | None = None

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Quit and a screenshot, in place of Textual's generic entries (:func:`system_commands`)."""
        return system_commands(self, self.action_quit_app)

    def on_mount(self) -> None:
        self.push_screen(LoadingScreen([*self.base, *self.test]))
        self.load_runs()

    def cancel_load(self) -> None:
        """Esc / q while loading: quit (code 130, as the command line)."""
        self.workers.cancel_group(self, "load")
        self.exit(EXIT_INTERRUPTED, return_code=EXIT_INTERRUPTED)

    @work(thread=True, exclusive=True, group="load")
    def load_runs(self) -> None:
        """Load both runs, compare them, prepare both timelines; post the result or the error."""
        from gputop_trace.analysis.diff.compare import diff_runs
        from gputop_trace.load.runs import load_run, same_inputs
        from gputop_trace.tui.view.timeline_data import prepare_timeline

        worker = get_current_worker()
        last = [0.0]

        def progress(done: int, total: int, events: int) -> None:
            if worker.is_cancelled:
                raise LoadCancelled()
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_INTERVAL_S:
                last[0] = now
                self.post_message(LoadProgress(done, total, events, "reading"))

        opts: dict[str, Any] = {
            "max_memory": self.max_memory,
            "use_cache": self.use_cache,
            "include_python": self.include_python,
            "progress": progress,
        }
        try:
            if self.runs is not None:
                base, test = self.runs
            else:
                base = load_run("BASE", self.base, **opts)
                test = load_run("TEST", self.test, **opts)
            self.post_message(LoadProgress(0, 0, len(base) + len(test), "comparing"))
            diff = diff_runs(base, test, identical=same_inputs(self.base, self.test))
            data = (prepare_timeline(base), prepare_timeline(test))
        except LoadCancelled:
            return
        except TraceError as e:
            self.post_message(LoadFailed(cli_error_text(e.message), EXIT_BAD_INPUT))
            return
        except MemoryError:
            self.post_message(LoadFailed(cli_error_text(MEMORY_MESSAGE), EXIT_BAD_INPUT))
            return
        except Exception as e:  # a bug: say so as the command line would
            if os.environ.get("GPUTOP_DEBUG"):
                import traceback

                traceback.print_exc()
            self.post_message(LoadFailed(cli_error_text(internal_error_message(e)), EXIT_INTERNAL))
            return
        self.post_message(DiffReady(diff, data))

    def on_diff_ready(self, message: DiffReady) -> None:
        self.diff = message.diff
        paths = (", ".join(self.base), ", ".join(self.test))
        self.switch_screen(DiffScreen(message.diff, message.data, paths))

    def on_load_progress(self, message: LoadProgress) -> None:
        screen = self.screen
        if isinstance(screen, LoadingScreen):
            screen.show_progress(message.done, message.total, message.events, message.stage)

    def on_load_failed(self, message: LoadFailed) -> None:
        def close(_: None) -> None:
            self.exit(message.exit_code, return_code=message.exit_code)

        self.push_screen(ErrorDialog("Could not open the runs", message.text), close)

    def action_quit_app(self) -> None:
        """Quit (q, Esc, Ctrl+C); while loading, cancel (exit code 130)."""
        if any(isinstance(s, LoadingScreen) for s in self.screen_stack):
            self.cancel_load()
            return
        self.exit(EXIT_OK, return_code=EXIT_OK)
