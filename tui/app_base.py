"""What the trace browser (:class:`~gputop_trace.tui.app.GputopApp`) and the app for two runs
(:class:`~gputop_trace.tui.diff_app.DiffApp`) share: the style sheet, colours on or off, the palette's system
commands, the progress screen fed by the load worker, quitting with the command line's exit codes, and the one
place where a worker's failure is handled (:meth:`AppBase.on_worker_state_changed`): a load that failed shows the
command line's error text in a dialog, and closing it exits with the command line's code."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.safe_text import clean
from gputop_trace.tui.commands import system_commands
from gputop_trace.tui.messages import LoadProgress
from gputop_trace.tui.theme import use_gputop_themes

if TYPE_CHECKING:
    from gputop_trace.model.trace import Trace

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 2, 70, 130
#: how often the loading screen shows progress, in seconds: each update is redrawn on the UI thread, which holds
#: the GIL the parser needs (at 20 a second the UI took a fifth of the load's CPU time on a 50 MB trace)
PROGRESS_INTERVAL_S = 0.25

MEMORY_MESSAGE = (
    "Ran out of memory. The trace is larger than this machine can hold: close other programs, use a "
    "machine with more memory, or record a shorter profile (fewer steps, no with_stack)."
)


def cli_error_text(message: str) -> str:
    """The line the command line prints for an error (``gputop-trace: error: …``), as plain text."""
    return "gputop-trace: error: " + clean(message)


def internal_error_message(exc: BaseException) -> str:
    """The command line's message for a bug in this program."""
    return (
        f"internal error: {type(exc).__name__}: {exc}. This is a bug in gputop-trace; please report it with the "
        "command you ran (set GPUTOP_DEBUG=1 to print the traceback)."
    )


def print_debug_traceback(error: BaseException) -> None:
    """Print ``error``'s traceback on stderr when ``GPUTOP_DEBUG`` is set (a bug, said as the command line would)."""
    if os.environ.get("GPUTOP_DEBUG"):
        import traceback

        traceback.print_exception(error)


def load_error(error: BaseException) -> tuple[str, int] | None:
    """What the command line prints for a load that raised ``error`` and the code it exits with; None for a load
    that was cancelled."""
    if isinstance(error, LoadCancelled):
        return None
    if isinstance(error, TraceError):
        return cli_error_text(error.message), EXIT_BAD_INPUT
    if isinstance(error, MemoryError):
        return cli_error_text(MEMORY_MESSAGE), EXIT_BAD_INPUT
    print_debug_traceback(error)
    return cli_error_text(internal_error_message(error)), EXIT_INTERNAL


class AppBase(App[int]):
    """The scaffolding both apps share. A subclass loads in a worker of group ``load`` (started with
    ``exit_on_error=False``: what it raises is shown here), posting :class:`LoadProgress` as it goes."""

    CSS_PATH = "app.tcss"
    #: the error dialog's title when the load fails
    LOAD_ERROR_TITLE = "Could not open the trace"

    def __init__(self) -> None:
        super().__init__()
        use_gputop_themes(self)  # the palette's colours; monochrome under NO_COLOR
        #: the trace shown (None while loading, and in the app for two runs)
        self.trace: Trace | None = None

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Quit and a screenshot, in place of Textual's generic entries (:func:`system_commands`)."""
        return system_commands(self, self.action_quit_app)

    # ---- loading ---------------------------------------------------------------------------------------------
    def on_load_progress(self, message: LoadProgress) -> None:
        from gputop_trace.tui.screens.loading import LoadingScreen

        screen = self.screen
        if isinstance(screen, LoadingScreen):
            screen.show_progress(message.done, message.total, message.events, message.stage)

    def loading(self) -> bool:
        """Whether the progress screen is up."""
        from gputop_trace.tui.screens.loading import LoadingScreen

        return any(isinstance(s, LoadingScreen) for s in self.screen_stack)

    def cancel_load(self) -> None:
        """Esc / q while loading: quit (code 130, as the command line)."""
        self.workers.cancel_group(self, "load")
        self.exit(EXIT_INTERRUPTED, return_code=EXIT_INTERRUPTED)

    def show_load_error(self, text: str, exit_code: int) -> None:
        """The load failed: ``text`` (the command line's) in a dialog; closing it calls :meth:`load_error_closed`."""
        from gputop_trace.tui.screens.dialogs import ErrorDialog

        self.push_screen(ErrorDialog(self.LOAD_ERROR_TITLE, text), lambda _: self.load_error_closed(exit_code))

    def load_error_closed(self, exit_code: int) -> None:
        """The load's error dialog was closed: exit with the command line's code."""
        self.exit(exit_code, return_code=exit_code)

    # ---- worker failures -------------------------------------------------------------------------------------
    @on(Worker.StateChanged)
    def _worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a worker's failure is handled: one left behind (cancelled) is ignored, the others go to
        :meth:`worker_failed`."""
        worker = event.worker
        if event.state != WorkerState.ERROR or worker.is_cancelled or worker.error is None:
            return
        self.worker_failed(worker, worker.error)

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        """A worker raised ``error``: a load shows the command line's error (see :func:`load_error`)."""
        if worker.group == "load":
            failed = load_error(error)
            if failed is not None:
                self.show_load_error(*failed)

    # ---- quitting --------------------------------------------------------------------------------------------
    def action_quit_app(self) -> None:
        """Quit (q, Ctrl+C). While loading, this cancels the load (exit code 130, as the command line)."""
        if self.loading():
            self.workers.cancel_group(self, "load")
            self.exit(EXIT_INTERRUPTED, return_code=EXIT_INTERRUPTED)
            return
        self.exit(EXIT_OK, return_code=EXIT_OK)
