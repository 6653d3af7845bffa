"""The timeline pane: one Line-API widget drawing a time ruler and the lanes of a trace (the drawing is
``TimelineCanvas``'s); this module holds what moves the view and the selection.

The view is a time window ``[t0, t1)``, a time cursor (the zoom pivot, where Enter picks an event), a current
line and the first line shown. The screen's key bindings call the navigation methods; a click on a line's label
folds it, a click on the plot selects the event under it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from textual import events
from textual.message import Message

from gputop_trace.model.kinds import Kind
from gputop_trace.tui.view.lanes import RowKind
from gputop_trace.tui.view.navigation import step_in_row
from gputop_trace.tui.view.timeline_math import (
    bin_row,
    clamp_window,
    column_bounds,
    fit_interval,
    pan_window,
    window_around,
    zoom_window,
)
from gputop_trace.tui.widgets.timeline_canvas import Interval, TimelineCanvas

ZOOM_STEP = 0.5  # w / + halve the window, s / - double it
PAN_STEP = 0.25  # a / d move by a quarter of the window


@dataclass(frozen=True)
class CellInfo:
    """What the cursor's cell holds on the current line: events touching it, busy fraction, dominant event."""

    count: int
    fraction: float
    event: int
    t0: int
    t1: int


class Timeline(TimelineCanvas, can_focus=True):
    """The timeline pane. Navigation methods are called by the screen's key bindings."""

    DEFAULT_CSS = """
    Timeline {
        height: 1fr;
        min-height: 4;
    }
    """

    class Changed(Message):
        """The view, the cursor or the selection changed (``selection`` True when the selection did)."""

        def __init__(self, selection: bool) -> None:
            super().__init__()
            self.selection = selection

    # ---- state changes -------------------------------------------------------------------------------------
    def _changed(self, *, selection: bool = False) -> None:
        self.refresh()
        self.post_message(self.Changed(selection))

    def set_window(self, t0: int, t1: int) -> None:
        """Show ``[t0, t1)`` (clamped to the trace); the cursor stays at the same screen column."""
        w = self.window
        col = min(max(w.col_of(self.cursor_t), 0), w.width - 1)
        frac = (col + 0.5) / w.width
        self.t0, self.t1 = t0, t1
        self.cursor_t = self.t0 + int((self.t1 - self.t0) * frac)
        self._changed()

    def zoom(self, factor: float) -> None:
        """Zoom around the cursor (``factor`` < 1 zooms in)."""
        t0, t1 = zoom_window(self.t0, self.t1, self.cursor_t, factor, lo=self.lo, hi=self.hi, width=self.plot_width)
        w_old = self.window
        col = w_old.col_of(self.cursor_t)
        self.t0, self.t1 = t0, t1
        # keep the cursor time; if clamping moved the window, keep it inside
        if not self.t0 <= self.cursor_t < self.t1:
            self.cursor_t = self.window.time_of(min(max(col, 0), self.plot_width - 1))
        self._changed()

    def goto_time(self, t: int) -> None:
        """Centre the window on ``t`` (keeping its width) and put the cursor there."""
        span = self.t1 - self.t0
        self.t0, self.t1 = clamp_window(t - span // 2, t - span // 2 + span, self.lo, self.hi, self.plot_width)
        self.cursor_t = min(max(t, self.t0), self.t1 - 1)
        self._changed()

    def pan(self, fraction: float) -> None:
        """Move the window by ``fraction`` of its width; the cursor moves with it."""
        t0, t1 = pan_window(self.t0, self.t1, fraction, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t += t0 - self.t0
        self.t0, self.t1 = t0, t1
        self.cursor_t = min(max(self.cursor_t, self.t0), self.t1 - 1)
        self._changed()

    def fit_all(self) -> None:
        """Show the whole trace."""
        self.t0, self.t1 = self.lo, self.hi
        self.cursor_t = min(max(self.cursor_t, self.t0), self.t1 - 1)
        self._changed()

    def move_cursor(self, columns: int) -> None:
        """Move the time cursor by whole columns, panning when it would leave the window."""
        w = self.window
        col = w.col_of(self.cursor_t) + columns
        if col < 0 or col >= w.width:
            self.pan(columns / w.width)
            w = self.window
            col = min(max(col, 0), w.width - 1)
        self.cursor_t = w.time_of(col) + max(0, (w.time_of(col + 1) - w.time_of(col)) // 2)
        self._changed()

    def move_line(self, delta: int) -> None:
        """Move the lane cursor up or down."""
        if not self.lines:
            return
        self.current = max(0, min(len(self.lines) - 1, self.current + delta))
        self._scroll_to_current()
        self._changed()

    def toggle_fold(self, key: str | None = None) -> str | None:
        """Collapse or expand the group or multi-row lane under the lane cursor (or ``key``); returns the key."""
        if key is None:
            line = self.current_line
            if line is None or line.kind in (RowKind.UTIL, RowKind.NOTE, RowKind.MEMORY):
                return None
            if line.kind == RowKind.EVENTS and line.rows_in_lane <= 1:
                return None
            key = line.key
        if key in self.collapsed:
            self.collapsed.discard(key)
        else:
            self.collapsed.add(key)
        self._rebuild_lines()
        self._scroll_to_current()
        self._changed()
        return key

    def set_collapsed(self, keys: set[str]) -> None:
        """Replace the set of collapsed groups and lanes."""
        self.collapsed = set(keys)
        self._rebuild_lines()
        self._scroll_to_current()
        self._changed()

    def reveal_rank(self, rank: int) -> bool:
        """Expand a rank's groups and bring its first line to the top, with the lane cursor on it. False when the
        trace shows no lanes of that rank."""
        self.collapsed.difference_update(self.data.layout.rank_keys(rank))
        self._rebuild_lines()
        idx = next(
            (i for i, ln in enumerate(self.lines) if ln.kind != RowKind.NOTE and ln.rank == rank),
            -1,
        )
        if idx < 0:
            self._changed()
            return False
        self.current = idx
        self.top = max(0, min(idx, max(0, len(self.lines) - self.visible_lines)))
        self._changed()
        return True

    def show_rank_interval(self, rank: int, start: int, end: int, cursor: int) -> bool:
        """Show ``[start, end)`` with a little context on a rank's lanes (expanded), the cursor at ``cursor``."""
        self.t0, self.t1 = fit_interval(start, end, margin=0.02, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = min(max(cursor, self.t0), self.t1 - 1)
        return self.reveal_rank(rank)

    def show_span(self, start: int, end: int) -> None:
        """Fit the window to ``[start, end)`` with a little context (a step, for its critical path)."""
        self.t0, self.t1 = fit_interval(start, end, margin=0.02, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = min(max(self.cursor_t, self.t0), self.t1 - 1)
        self._changed()

    def move_to_row(self, lane: int, depth: int = 0) -> None:
        """Put the lane cursor on row ``depth`` of ``lane`` (expanding what hides it) and scroll to it."""
        line = self.line_of_row(lane, depth)
        if line >= 0:
            self.current = line
            self._scroll_to_current()
            self._changed()

    def centre_on(self, start: int, end: int) -> None:
        """Centre the window on ``[start, end)`` keeping the zoom (zooming out when it is longer than most of the
        window); the cursor goes to its middle."""
        span = self.t1 - self.t0
        if end - start > span * 0.8:
            self.t0, self.t1 = fit_interval(start, end, margin=0.1, lo=self.lo, hi=self.hi, width=self.plot_width)
        else:
            self.t0, self.t1 = window_around(start, end, span, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = min(max((start + end) // 2, self.t0), self.t1 - 1)
        self._changed()

    # ---- selection -----------------------------------------------------------------------------------------
    def select(self, event: int, *, reveal: bool = True, rezoom: bool = False) -> None:
        """Select ``event`` (``-1`` clears): highlight it and its launch partner; bring it into view.

        ``rezoom`` also adjusts the zoom so that the event is neither invisible nor cut (jumps from panels)."""
        self.selected = int(event)
        self.interval = None
        if event >= 0 and self.flows is not None:
            self.partners = self.flows.partners(int(event))
        else:
            self.partners = np.zeros(0, dtype=np.int64)
        if event >= 0 and reveal:
            t = self.data.trace
            s = int(t.start_ns[event])
            e = s + max(int(t.dur_ns[event]), 1)
            self.current = self.line_of_event(int(event))
            self._scroll_to_current()
            self._bring_into_view(s, e, rezoom=rezoom)
        self._changed(selection=True)

    def select_interval(self, interval: Interval) -> None:
        """Select a time interval (an idle gap): show it with context on its GPU's utilization strip."""
        self.selected = -1
        self.partners = np.zeros(0, dtype=np.int64)
        self.interval = interval
        if interval.device >= 0:
            line = self.line_of_util(interval.rank, interval.device)
            if line >= 0:
                self.current = line
                self._scroll_to_current()
        self.t0, self.t1 = fit_interval(
            interval.start, interval.end, margin=0.5, lo=self.lo, hi=self.hi, width=self.plot_width
        )
        self.cursor_t = (interval.start + interval.end) // 2
        self._changed(selection=True)

    def _bring_into_view(self, s: int, e: int, *, rezoom: bool) -> None:
        span = self.t1 - self.t0
        dur = e - s
        if rezoom:
            target = min(max(span, int(dur * 1.25) + 1), max(dur * 16, self.plot_width))
            if target != span or not (self.t0 + span // 10 <= s and e <= self.t1 - span // 10):
                self.t0, self.t1 = window_around(s, e, target, lo=self.lo, hi=self.hi, width=self.plot_width)
        elif dur > span:
            if not (self.t0 <= s < self.t1):
                self.t0, self.t1 = fit_interval(s, e, margin=0.1, lo=self.lo, hi=self.hi, width=self.plot_width)
        elif not (self.t0 + span // 10 <= s and e <= self.t1 - span // 10):
            # off screen or at its edge (the outer tenth): centre it, keeping the zoom
            self.t0, self.t1 = window_around(s, e, span, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = min(max((s + e) // 2, self.t0), self.t1 - 1)

    def zoom_to_selection(self) -> bool:
        """Fit the window to the selected event or interval (with a little context). False if none."""
        if self.selected >= 0:
            t = self.data.trace
            s = int(t.start_ns[self.selected])
            e = s + max(int(t.dur_ns[self.selected]), 1)
        elif self.interval is not None:
            s, e = self.interval.start, self.interval.end
        else:
            return False
        self.t0, self.t1 = fit_interval(s, e, margin=0.1, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = (s + e) // 2
        self._changed()
        return True

    def cell_at_cursor(self) -> CellInfo | None:
        """What the cursor's cell holds on the current line (None on a group line)."""
        line = self.current_line
        if line is None or line.kind in (RowKind.GROUP, RowKind.NOTE, RowKind.MEMORY):
            return None
        w = self.window
        col = w.col_of(self.cursor_t)
        if not 0 <= col < w.width:
            return None
        b = column_bounds(w)[col : col + 2]
        if line.kind == RowKind.UTIL:
            row = self.data.util_row(line.rank, line.device)
        else:
            row = self.data.row(line.lane, line.depth)
        bins = bin_row(row, b)
        dom = int(bins.dominant[0])
        ev = int(row.events[dom]) if dom >= 0 else -1
        return CellInfo(int(bins.count[0]), float(bins.fraction[0]), ev, int(b[0]), int(b[1]))

    def select_under_cursor(self) -> bool:
        """Select the dominant event of the cursor's cell on the current line. False if there is none."""
        info = self.cell_at_cursor()
        if info is None or info.event < 0:
            return False
        self.select(info.event, reveal=False)
        return True

    def step_event(self, direction: int) -> bool:
        """Select the previous/next event on the current line. False at either end (or on a header)."""
        line = self.current_line
        if line is None or line.kind != RowKind.EVENTS:
            return False
        row = self.data.row(line.lane, line.depth)
        t = self.data.trace
        cur = self.selected
        if cur >= 0 and (int(t.lane[cur]), int(t.depth[cur])) == (line.lane, line.depth):
            nxt = step_in_row(row, cur, int(t.start_ns[cur]), direction)
        else:
            nxt = step_in_row(row, -1, self.cursor_t, direction)
        if nxt < 0:
            return False
        self.select(nxt)
        return True

    # ---- mouse ---------------------------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        meta = event.style.meta
        row = meta.get("row")
        if not isinstance(row, int) or not 0 <= row < len(self.lines):
            return
        self.current = row
        if meta.get("gutter"):
            line = self.lines[row]
            if line.kind == RowKind.GROUP or (line.kind == RowKind.EVENTS and line.rows_in_lane > 1):
                self.toggle_fold(line.key)
                return
            self._changed()
            return
        col = event.x - self.label_width
        w = self.window
        if 0 <= col < w.width:
            self.cursor_t = (w.time_of(col) + w.time_of(col + 1)) // 2
        if not self.select_under_cursor():
            self._changed()

    # ---- helpers for callers -------------------------------------------------------------------------------
    def kind_of_selected(self) -> Kind | None:
        """The kind of the selected event, if any."""
        return Kind(int(self.data.trace.kind[self.selected])) if self.selected >= 0 else None
