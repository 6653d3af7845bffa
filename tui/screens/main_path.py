"""The critical path on the main screen: ``p`` draws the path of the step under the cursor over the lanes (and hides
it), ``n`` / ``N`` walk its segments while it is shown (they walk a name's instances or the search matches
otherwise), panel 9 shows its breakdown and what-if. The paths are computed in a worker the first time ``p`` or
panel 9 asks for them (``GputopApp.want_critical_path``); until they arrive the panel says so, and ``p`` shows the
path as soon as they do. A failure is shown in a dialog and in the panel. :class:`PathOnScreen` is the screen's
helper for all of it (the screen owns one and hands it the keys and messages)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.widgets.timeline_canvas import Interval
from gputop_trace.units import format_ns

if TYPE_CHECKING:
    from textual.screen import Screen

    from gputop_trace.analysis.critical_path.path import StepPath
    from gputop_trace.model.trace import Trace
    from gputop_trace.tui.hosts import TraceApp
    from gputop_trace.tui.view.timeline_data import TimelineData
    from gputop_trace.tui.widgets.critical_path_panel import CriticalPathPanel, PathSegmentChosen, PathStepChosen
    from gputop_trace.tui.widgets.timeline import Timeline


class PathHost(Protocol):
    """What the path needs of the main screen it is drawn on, besides Textual's own (notify, query_one, app)."""

    data: TimelineData
    trace: Trace
    panel: str

    @property
    def timeline(self) -> Timeline:
        """The screen's timeline."""

    @property
    def gputop_app(self) -> TraceApp:
        """The app, typed."""

    def when_panels(self, call: Callable[[], None]) -> None:
        """Call once the panels are mounted."""

    def show_panel(self, name: str) -> None:
        """Show panel ``name``."""

    def refresh_status(self) -> None:
        """Redraw the status bar."""

    def refresh_details(self) -> None:
        """Redraw the details pane."""


class PathOnScreen:
    """``p``, ``n`` / ``N`` on the path, panel 9, and the critical-path results, for the main ``screen``."""

    def __init__(self, screen: Screen[Any], host: PathHost) -> None:
        """``screen`` and ``host`` are the same main screen, as a Textual screen and as what the path reads of it."""
        self.screen = screen
        self.host = host
        #: every step's path once computed (None before)
        self.step_paths: list[StepPath] | None = None
        #: the step path shown in the panel and (when ``shown``) on the timeline: an index into ``step_paths``
        self.index = 0
        #: whether the path is drawn on the timeline
        self.shown = False
        #: the segment ``n`` / ``N`` last went to (-1: none yet)
        self.segment = -1
        #: ``p`` was pressed before the paths were ready: show them when they arrive
        self.pending = False

    @property
    def trace(self) -> Trace:
        return self.host.trace

    @property
    def timeline(self) -> Timeline:
        return self.host.timeline

    def path_panel(self) -> CriticalPathPanel:
        """Panel 9 (its module, with the critical path's, is imported when the path is first asked for)."""
        from gputop_trace.tui.widgets.critical_path_panel import CriticalPathPanel

        return self.screen.query_one(CriticalPathPanel)

    @property
    def current(self) -> StepPath | None:
        """The step path the panel and the timeline show."""
        paths = self.step_paths
        return paths[self.index] if paths and 0 <= self.index < len(paths) else None

    @property
    def multi_rank(self) -> bool:
        return len({p.rank for p in self.step_paths or ()}) > 1

    def start(self) -> None:
        """Ask the app for the paths (once); the panel says they are being computed."""
        if self.step_paths is None and self.host.gputop_app.want_critical_path():
            self.host.when_panels(lambda: self.path_panel().show_computing())

    # ---- results -------------------------------------------------------------------------------------------
    def ready(self, paths: list[StepPath]) -> None:
        """The worker's paths arrived: fill the panel (on the step under the cursor), and draw the path if ``p``
        asked for it."""
        self.step_paths = list(paths)
        self.index = self._step_under_cursor()
        self.path_panel().show_paths(self.step_paths, self.index)
        if self.pending:
            self.pending = False
            self.show(announce=True)

    def failed(self, text: str) -> None:
        """The analysis failed: the reason in the panel, and in a dialog."""
        self.pending = False
        self.path_panel().show_error(text)
        self.screen.app.push_screen(ErrorDialog("Could not work out the critical path", text))

    def _step_under_cursor(self) -> int:
        from gputop_trace.tui.view.critical_path_view import path_at

        line = self.timeline.current_line
        rank = line.rank if line is not None and line.rank >= 0 else None
        return path_at(self.step_paths or [], rank, self.timeline.cursor_t)

    # ---- p -------------------------------------------------------------------------------------------------
    def toggle(self) -> None:
        """p: draw the critical path of the step under the cursor on the timeline, or hide it."""
        if self.shown:
            self.shown = False
            self.segment = -1
            self.timeline.set_path_marks(None)
            self.host.refresh_status()
            self.host.refresh_details()
            self.screen.notify("Critical path hidden; n / N walk a name's instances again.", timeout=2)
            return
        if self.step_paths is None:
            self.pending = True
            self.start()
            self.screen.notify("Working out the critical path of every step…", title="Critical path", timeout=4)
            return
        if not self.step_paths:
            self.screen.notify(
                "No step to analyse: the trace has no GPU work the critical path could follow.",
                title="Critical path",
                timeout=5,
            )
            return
        self.index = self._step_under_cursor()
        self.path_panel().show_step(self.index)
        self.show(announce=True)

    def show(self, *, announce: bool) -> None:
        """Draw the current step's path; bring the step into view when the window shows none of it."""
        from gputop_trace.tui.view.critical_path_view import (
            breakdown_items,
            category_title,
            format_pct,
            path_marks,
            pct,
            step_title,
        )

        path = self.current
        if path is None:
            return
        tl = self.timeline
        self.shown = True
        self.segment = -1
        tl.set_path_marks(path_marks(self.trace, path, self.host.data.util.keys()))
        end = path.start_ns + max(path.dur_ns, 1)
        if tl.t1 <= path.start_ns or tl.t0 >= end or tl.t1 - tl.t0 > 2 * (end - path.start_ns):
            tl.show_span(path.start_ns, end)  # the step, when the window shows none of it or much more
        self.host.refresh_status()
        if announce:
            top = ", ".join(f"{category_title(c)} {format_pct(p)}" for c, _, p in breakdown_items(path)[:3])
            self.screen.notify(
                f"{step_title(path, multi_rank=self.multi_rank)}: path {format_ns(path.length_ns)} of the "
                f"{format_ns(path.dur_ns)} step ({format_pct(pct(path.length_ns, path.dur_ns))}): {top}. "
                f"n / N walk its {len(path.segments):,} segments, 9 the breakdown, p hides it.",
                title="Critical path",
                timeout=6,
            )

    # ---- n / N ---------------------------------------------------------------------------------------------
    def walk(self, direction: int) -> bool:
        """n / N while the path is shown: the next / previous segment. False when the path is not shown."""
        from gputop_trace.tui.view.critical_path_view import walk

        path = self.current
        if not self.shown or path is None:
            return False
        nxt = walk(path, self.segment, direction, self.timeline.cursor_t)
        if nxt < 0:
            self.screen.notify(f"No {'next' if direction > 0 else 'previous'} segment on this step's path.", timeout=2)
            return True
        self.go_to_segment(nxt)
        return True

    def go_to_segment(self, i: int) -> None:
        """Select segment ``i`` of the current path: its event (or, for idle time, its span on the GPU busy strip),
        centred on the timeline, what it is in the details and the status bar."""
        from gputop_trace.tui.view.critical_path_view import segment_rows, segment_words

        path = self.current
        if path is None or not 0 <= i < len(path.segments):
            return
        self.segment = i
        seg = path.segments[i]
        if self.host.panel != "details":
            self.host.show_panel("details")
        tl = self.timeline
        end = seg.start_ns + max(seg.dur_ns, 1)
        if 0 <= seg.event < len(self.trace):
            tl.select(seg.event)
            tl.centre_on(seg.start_ns, end)
        else:
            rank, device = self._strip_of_segment(i)
            rows = segment_rows(path, i, multi_rank=self.multi_rank)
            tl.select_interval(Interval(seg.start_ns, end, rank, device, segment_words(path, i), tuple(rows)))
            if device < 0 and 0 <= seg.lane < len(self.trace.lanes):
                tl.move_to_row(seg.lane)  # time waited on a thread: the lane cursor on that thread
        self.host.refresh_status()

    def _strip_of_segment(self, i: int) -> tuple[int, int]:
        """The (rank, device) of the GPU busy strip that shows segment ``i`` of the current path when it has no
        event: the strip it is drawn on, else its lane's GPU; device -1 when there is none."""
        path = self.current
        marks = self.timeline.path_marks
        if marks is not None and i in marks.strip_of:
            return marks.strip_of[i]
        assert path is not None
        seg = path.segments[i]
        if 0 <= seg.lane < len(self.trace.lanes):
            lane = self.trace.lanes[seg.lane]
            if (lane.rank, lane.device) in self.host.data.util:
                return lane.rank, lane.device
        return seg.rank, -1

    def segment_chosen(self, message: PathSegmentChosen) -> None:
        """Enter on an item of panel 9: the path drawn, its segment selected."""
        self.index = message.index
        if not self.shown or self.timeline.path_marks is None:
            self.show(announce=False)
        self.go_to_segment(message.segment)

    def step_chosen(self, message: PathStepChosen) -> None:
        """[ / ] in panel 9: that step's path on the timeline too, when it is shown."""
        self.index = message.index
        if self.shown:
            self.show(announce=False)

    # ---- the status bar and the details --------------------------------------------------------------------
    def status(self, own: str) -> str:
        """The status bar's search part ``own`` with, while the path is shown, the walked segment (or the path's
        length)."""
        path = self.current
        if not self.shown or path is None:
            return own
        from gputop_trace.tui.view.critical_path_view import segment_status

        where = (
            segment_status(path, self.segment)
            if 0 <= self.segment < len(path.segments)
            else f"path {format_ns(path.length_ns)} · n N walk"
        )
        return f"{own} · {where}" if own else where

    def lead(self, event: int) -> list[tuple[str, str]]:
        """Rows above the details of ``event`` while the path is shown: the walked segment when it is that
        segment's event, else how much of the event is on the path (or that it is not)."""
        path = self.current
        if not self.shown or path is None:
            return []
        from gputop_trace.tui.view.critical_path_view import event_rows, segment_rows

        i = self.segment
        if 0 <= i < len(path.segments) and path.segments[i].event == event:
            return segment_rows(path, i, multi_rank=self.multi_rank)
        start, end = int(self.trace.start_ns[event]), int(self.trace.end_ns[event])
        return event_rows(path, event, start, end, multi_rank=self.multi_rank)
