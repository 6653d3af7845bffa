"""The critical path on the main screen: ``p`` draws the path of the step under the cursor over the lanes (and hides
it), ``n`` / ``N`` walk its segments while it is shown (they walk a name's instances or the search matches
otherwise), panel 9 shows its breakdown and what-if. The paths are computed in a worker the first time ``p`` or
panel 9 asks for them (``GputopApp.want_critical_path``); until they arrive the panel says so, and ``p`` shows the
path as soon as they do. A failure is shown in a dialog and in the panel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.main_state import MainState
from gputop_trace.tui.widgets.timeline_canvas import Interval
from gputop_trace.units import format_ns

if TYPE_CHECKING:
    from gputop_trace.analysis.critical_path.path import StepPath
    from gputop_trace.tui.widgets.critical_path_panel import CriticalPathPanel, PathSegmentChosen, PathStepChosen


def _panel(screen: MainState) -> CriticalPathPanel:
    """Panel 9 (its module, with the critical path's, is imported when the path is first asked for)."""
    from gputop_trace.tui.widgets.critical_path_panel import CriticalPathPanel

    return screen.query_one(CriticalPathPanel)


class PathKeys(MainState):
    """``p``, ``n`` / ``N`` on the path, panel 9, and the critical-path results."""

    #: every step's path once computed (None before)
    step_paths: list[StepPath] | None = None
    #: the step path shown in the panel and (when ``path_shown``) on the timeline: an index into ``step_paths``
    path_index = 0
    #: whether the path is drawn on the timeline
    path_shown = False
    #: the segment ``n`` / ``N`` last went to (-1: none yet)
    path_segment = -1
    #: ``p`` was pressed before the paths were ready: show them when they arrive
    path_pending = False

    @property
    def current_path(self) -> StepPath | None:
        """The step path the panel and the timeline show."""
        paths = self.step_paths
        return paths[self.path_index] if paths and 0 <= self.path_index < len(paths) else None

    @property
    def multi_rank_paths(self) -> bool:
        return len({p.rank for p in self.step_paths or ()}) > 1

    def _start_paths(self) -> None:
        """Ask the app for the paths (once); the panel says they are being computed."""
        app: Any = self.app
        want = getattr(app, "want_critical_path", None)
        if self.step_paths is None and callable(want) and want():
            self.when_panels(lambda: _panel(self).show_computing())

    # ---- panel 9 -------------------------------------------------------------------------------------------
    def show_panel(self, name: str) -> None:
        if name == "path":
            self._start_paths()
        super().show_panel(name)

    # ---- results -------------------------------------------------------------------------------------------
    def path_ready(self, paths: list[StepPath]) -> None:
        """The worker's paths arrived: fill the panel (on the step under the cursor), and draw the path if ``p``
        asked for it."""
        self.step_paths = list(paths)
        self.path_index = self._step_under_cursor()
        _panel(self).show_paths(self.step_paths, self.path_index)
        if self.path_pending:
            self.path_pending = False
            self._show_path(announce=True)

    def path_failed(self, text: str) -> None:
        """The analysis failed: the reason in the panel, and in a dialog."""
        self.path_pending = False
        _panel(self).show_error(text)
        self.app.push_screen(ErrorDialog("Could not work out the critical path", text))

    def _step_under_cursor(self) -> int:
        from gputop_trace.tui.view.critical_path_view import path_at

        line = self.timeline.current_line
        rank = line.rank if line is not None and line.rank >= 0 else None
        return path_at(self.step_paths or [], rank, self.timeline.cursor_t)

    # ---- p -------------------------------------------------------------------------------------------------
    def action_toggle_path(self) -> None:
        """p: draw the critical path of the step under the cursor on the timeline, or hide it."""
        if self.path_shown:
            self.path_shown = False
            self.path_segment = -1
            self.timeline.set_path_marks(None)
            self.refresh_status()
            self.refresh_details()
            self.notify("Critical path hidden; n / N walk a name's instances again.", timeout=2)
            return
        if self.step_paths is None:
            self.path_pending = True
            self._start_paths()
            self.notify("Working out the critical path of every step…", title="Critical path", timeout=4)
            return
        if not self.step_paths:
            self.notify(
                "No step to analyse: the trace has no GPU work the critical path could follow.",
                title="Critical path",
                timeout=5,
            )
            return
        self.path_index = self._step_under_cursor()
        _panel(self).show_step(self.path_index)
        self._show_path(announce=True)

    def _show_path(self, *, announce: bool) -> None:
        """Draw the current step's path; bring the step into view when the window shows none of it."""
        from gputop_trace.tui.view.critical_path_view import (
            breakdown_items,
            category_title,
            format_pct,
            path_marks,
            pct,
            step_title,
        )

        path = self.current_path
        if path is None:
            return
        tl = self.timeline
        self.path_shown = True
        self.path_segment = -1
        tl.set_path_marks(path_marks(self.trace, path, self.data.util.keys()))
        end = path.start_ns + max(path.dur_ns, 1)
        if tl.t1 <= path.start_ns or tl.t0 >= end or tl.t1 - tl.t0 > 2 * (end - path.start_ns):
            tl.show_span(path.start_ns, end)  # the step, when the window shows none of it or much more
        self.refresh_status()
        if announce:
            top = ", ".join(f"{category_title(c)} {format_pct(p)}" for c, _, p in breakdown_items(path)[:3])
            self.notify(
                f"{step_title(path, multi_rank=self.multi_rank_paths)}: path {format_ns(path.length_ns)} of the "
                f"{format_ns(path.dur_ns)} step ({format_pct(pct(path.length_ns, path.dur_ns))}): {top}. "
                f"n / N walk its {len(path.segments):,} segments, 9 the breakdown, p hides it.",
                title="Critical path",
                timeout=6,
            )

    # ---- n / N ---------------------------------------------------------------------------------------------
    def walk_path(self, direction: int) -> bool:
        """n / N while the path is shown: the next / previous segment. False when the path is not shown."""
        from gputop_trace.tui.view.critical_path_view import walk

        path = self.current_path
        if not self.path_shown or path is None:
            return False
        nxt = walk(path, self.path_segment, direction, self.timeline.cursor_t)
        if nxt < 0:
            self.notify(f"No {'next' if direction > 0 else 'previous'} segment on this step's path.", timeout=2)
            return True
        self.go_to_segment(nxt)
        return True

    def go_to_segment(self, i: int) -> None:
        """Select segment ``i`` of the current path: its event (or, for idle time, its span on the GPU busy strip),
        centred on the timeline, what it is in the details and the status bar."""
        from gputop_trace.tui.view.critical_path_view import segment_rows, segment_words

        path = self.current_path
        if path is None or not 0 <= i < len(path.segments):
            return
        self.path_segment = i
        seg = path.segments[i]
        if self.panel != "details":
            self.show_panel("details")
        tl = self.timeline
        end = seg.start_ns + max(seg.dur_ns, 1)
        if 0 <= seg.event < len(self.trace):
            tl.select(seg.event)
            tl.centre_on(seg.start_ns, end)
        else:
            rank, device = self._strip_of_segment(i)
            rows = segment_rows(path, i, multi_rank=self.multi_rank_paths)
            tl.select_interval(Interval(seg.start_ns, end, rank, device, segment_words(path, i), tuple(rows)))
            if device < 0 and 0 <= seg.lane < len(self.trace.lanes):
                tl.move_to_row(seg.lane)  # time waited on a thread: the lane cursor on that thread
        self.refresh_status()

    def _strip_of_segment(self, i: int) -> tuple[int, int]:
        """The (rank, device) of the GPU busy strip that shows segment ``i`` of the current path when it has no
        event: the strip it is drawn on, else its lane's GPU; device -1 when there is none."""
        path = self.current_path
        marks = self.timeline.path_marks
        if marks is not None and i in marks.strip_of:
            return marks.strip_of[i]
        assert path is not None
        seg = path.segments[i]
        if 0 <= seg.lane < len(self.trace.lanes):
            lane = self.trace.lanes[seg.lane]
            if (lane.rank, lane.device) in self.data.util:
                return lane.rank, lane.device
        return seg.rank, -1

    def on_path_segment_chosen(self, message: PathSegmentChosen) -> None:
        """Enter on an item of panel 9: the path drawn, its segment selected."""
        message.stop()
        self.path_index = message.index
        if not self.path_shown or self.timeline.path_marks is None:
            self._show_path(announce=False)
        self.go_to_segment(message.segment)

    def on_path_step_chosen(self, message: PathStepChosen) -> None:
        """[ / ] in panel 9: that step's path on the timeline too, when it is shown."""
        message.stop()
        self.path_index = message.index
        if self.path_shown:
            self._show_path(announce=False)

    # ---- the status bar and the details --------------------------------------------------------------------
    def search_status(self) -> str:
        own = super().search_status()
        path = self.current_path
        if not self.path_shown or path is None:
            return own
        from gputop_trace.tui.view.critical_path_view import segment_status

        where = (
            segment_status(path, self.path_segment)
            if 0 <= self.path_segment < len(path.segments)
            else f"path {format_ns(path.length_ns)} · n N walk"
        )
        return f"{own} · {where}" if own else where

    def path_lead(self, event: int) -> list[tuple[str, str]]:
        """Rows above the details of ``event`` while the path is shown: the walked segment when it is that
        segment's event, else how much of the event is on the path (or that it is not)."""
        path = self.current_path
        if not self.path_shown or path is None:
            return []
        from gputop_trace.tui.view.critical_path_view import event_rows, segment_rows

        i = self.path_segment
        if 0 <= i < len(path.segments) and path.segments[i].event == event:
            return segment_rows(path, i, multi_rank=self.multi_rank_paths)
        start, end = int(self.trace.start_ns[event]), int(self.trace.end_ns[event])
        return event_rows(path, event, start, end, multi_rank=self.multi_rank_paths)
