"""The app for two runs (``gputop-trace diff --view BASE TEST``, ``gputop-trace view --diff BASE TEST``): both runs
are loaded and compared in a worker behind the progress screen, their timeline lookups prepared there too, then
the Diff view is shown. A side that cannot be read gets the command line's error, naming that side, in a dialog;
closing it exits with code 2."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from textual import work
from textual.binding import BindingType
from textual.message import Message
from textual.worker import get_current_worker

from gputop_trace.analysis.diff.compare import RunDiff
from gputop_trace.errors import LoadCancelled
from gputop_trace.model.trace import Trace
from gputop_trace.tui.app_base import PROGRESS_INTERVAL_S, AppBase
from gputop_trace.tui.keymap import quit_bindings
from gputop_trace.tui.messages import LoadProgress
from gputop_trace.tui.screens.diff import DiffScreen
from gputop_trace.tui.screens.loading import LoadingScreen
from gputop_trace.tui.view.timeline_data import TimelineData


class DiffReady(Message):
    """Both runs are loaded and compared."""

    def __init__(self, diff: RunDiff, data: tuple[TimelineData, TimelineData]) -> None:
        super().__init__()
        self.diff = diff
        self.data = data


class DiffApp(AppBase):
    """Two runs side by side."""

    TITLE = "gputop-trace diff"
    LOAD_ERROR_TITLE = "Could not open the runs"

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
        self.base, self.test = list(base), list(test)
        self.runs = runs
        self.max_memory = max_memory
        self.use_cache = use_cache
        self.include_python = include_python
        self.diff: RunDiff | None = None

    def on_mount(self) -> None:
        self.push_screen(LoadingScreen([*self.base, *self.test]))
        self.load_runs()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_runs(self) -> None:
        """Load both runs, compare them, prepare both timelines; post the result (what the load raises is shown by
        :meth:`AppBase.worker_failed`)."""
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
        if self.runs is not None:
            base, test = self.runs
        else:
            base = load_run("BASE", self.base, **opts)
            test = load_run("TEST", self.test, **opts)
        self.post_message(LoadProgress(0, 0, len(base) + len(test), "comparing"))
        diff = diff_runs(base, test, identical=same_inputs(self.base, self.test))
        data = (prepare_timeline(base), prepare_timeline(test))
        self.post_message(DiffReady(diff, data))

    def on_diff_ready(self, message: DiffReady) -> None:
        self.diff = message.diff
        paths = (", ".join(self.base), ", ".join(self.test))
        self.switch_screen(DiffScreen(message.diff, message.data, paths))
