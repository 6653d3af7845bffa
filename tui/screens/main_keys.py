"""The timeline's keys on the main screen: zoom, pan, the cursors, selecting and stepping through events, walking
the instances of a name or the search matches, following a launch flow, the search itself and going to a time."""

from __future__ import annotations

import re

from textual import work
from textual.message import Message

from gputop_trace.model.arrays import I64
from gputop_trace.tui.screens.dialogs import PromptScreen
from gputop_trace.tui.screens.main_state import MainState
from gputop_trace.tui.view.lanes import RowKind
from gputop_trace.tui.view.navigation import NameIndex, compile_search, search_events, step_in_sorted
from gputop_trace.units import format_ns, parse_duration_ns


class SearchDone(Message):
    """The search worker finished: the events matching ``pattern`` sorted by start."""

    def __init__(self, pattern: str, matches: I64, starts: I64) -> None:
        super().__init__()
        self.pattern = pattern
        self.matches = matches
        self.starts = starts


class TimelineKeys(MainState):
    """The key actions that move the timeline's view and selection, and the search."""

    # ---- timeline actions ------------------------------------------------------------------------------------
    def action_zoom(self, factor: float) -> None:
        """Zoom in (factor < 1) or out around the cursor."""
        self.timeline.zoom(factor)

    def action_pan(self, fraction: float) -> None:
        """Pan by a fraction of the window."""
        self.timeline.pan(fraction)

    def action_line(self, delta: int) -> None:
        """Move the lane cursor."""
        self.timeline.move_line(delta)

    def action_fit(self) -> None:
        """Show the whole trace."""
        self.timeline.fit_all()

    def action_zoom_selection(self) -> None:
        """Fit the window to the selection."""
        if not self.timeline.zoom_to_selection():
            self.notify("Nothing is selected: press Enter on an event first.", timeout=3)

    def action_step_event(self, direction: int) -> None:
        """Select the previous/next event in the current lane row."""
        tl = self.timeline
        line = tl.current_line
        if line is None or line.kind != RowKind.EVENTS:
            self.notify("Move to a lane with events (j/k) to step through it.", timeout=3)
            return
        if self.panel != "details":
            self.show_panel("details")
        if not tl.step_event(direction):
            self.notify("No more events in this lane row.", timeout=2)

    def action_cursor(self, columns: int) -> None:
        """Move the time cursor by one column."""
        self.timeline.move_cursor(columns)

    def action_select(self) -> None:
        """Enter on the timeline: fold/unfold a group header, else select the event under the cursor."""
        tl = self.timeline
        line = tl.current_line
        if line is None:
            return
        if line.kind == RowKind.GROUP:
            tl.toggle_fold()
            return
        if not tl.select_under_cursor():
            self.notify("No event under the cursor ▼ on this lane. Move with , and . or pan with a/d.", timeout=3)

    def action_fold(self) -> None:
        """Collapse or expand the group or multi-row lane under the lane cursor."""
        if self.timeline.toggle_fold() is None:
            self.notify("This line has nothing to fold (a lane with one row).", timeout=2)

    def action_instance(self, direction: int) -> None:
        """n / N: walk the critical path while it is shown (p), else the search matches, else the instances of the
        selected event's name."""
        if self.critical_path.walk(direction):
            return
        tl = self.timeline
        if self.search_pattern and self.matches is not None:
            events = self.matches
            if not len(events):
                self.notify(f"No events match /{self.search_pattern}/.", timeout=3)
                return
            assert self.match_starts is not None
            starts = self.match_starts
            cur = tl.selected
            t = int(self.trace.start_ns[cur]) if cur >= 0 else tl.cursor_t
            nxt = step_in_sorted(events, starts, cur, t, direction)
            what = "match"
        else:
            if tl.selected < 0:
                self.notify("Select an event first (Enter), or search with /.", timeout=3)
                return
            if self.names is None:
                self.notify("Still indexing names; try again in a moment.", timeout=2)
                return
            cur = tl.selected
            events, starts = self.names.instances_like(cur)
            nxt = step_in_sorted(events, starts, cur, int(self.trace.start_ns[cur]), direction)
            what = "instance of this name"
        if nxt < 0:
            self.notify(f"No {'next' if direction > 0 else 'previous'} {what}.", timeout=2)
            return
        self.select_and_show(nxt)

    def action_follow_flow(self) -> None:
        """x: jump from a launch call to the GPU op it launched, or back."""
        tl = self.timeline
        if tl.selected < 0:
            self.notify("Select a kernel, copy or launch call first (Enter).", timeout=3)
            return
        partners = self.flows.partners(tl.selected)
        if not len(partners):
            self.notify("This event has no launch flow (no correlation with a CPU call or a GPU op).", timeout=3)
            return
        self.select_and_show(int(partners[0]))

    # ---- search --------------------------------------------------------------------------------------------
    def action_search(self) -> None:
        """/: search event names with a regular expression; n / N walk the matches, Esc clears."""

        def validate(text: str) -> str | None:
            if not text:
                return None
            try:
                compile_search(text)
            except re.error as e:
                return f"not a regular expression: {e}"
            return None

        def done(text: str | None) -> None:
            if text is None:
                return
            if not text:
                self.clear_search()
                return
            self.search_pattern = text
            self.matches = None
            self.match_starts = None
            self.refresh_status()
            self.run_search(text)

        self.app.push_screen(
            PromptScreen(
                "Search event names (regex; smart case):",
                value=self.search_pattern,
                hint="Enter searches · n / N walk the matches · Esc cancels",
                placeholder="e.g. gemm|flash  or  ^nccl",
                validate=validate,
            ),
            done,
        )

    @work(thread=True, exclusive=True, group="search")
    def run_search(self, text: str) -> None:
        names = self.names or NameIndex(self.trace)
        matches = search_events(self.trace, names, compile_search(text))
        self.post_message(SearchDone(text, matches, self.trace.start_ns[matches]))

    def on_search_done(self, message: SearchDone) -> None:
        if message.pattern != self.search_pattern:
            return
        self.matches = message.matches
        self.match_starts = message.starts
        if len(message.matches):
            tl = self.timeline
            nxt = step_in_sorted(message.matches, message.starts, -1, tl.cursor_t - 1, 1)
            if nxt < 0:
                nxt = int(message.matches[0])
            tl.select(nxt)
        else:
            self.notify(f"No event name matches /{message.pattern}/.", timeout=4)
        self.refresh_status()

    def clear_search(self) -> None:
        self.search_pattern = ""
        self.matches = None
        self.match_starts = None
        self.refresh_status()

    # ---- go to a time ------------------------------------------------------------------------------------
    def goto_time(self, t: int) -> None:
        """Centre the window on time ``t`` (ns from the trace start) and put the cursor there."""
        self.timeline.goto_time(t)

    def action_goto_time_prompt(self) -> None:
        """Ask for a time and centre the timeline on it."""

        def validate(text: str) -> str | None:
            return None if self.parse_time(text) is not None else "write a time with a unit, like 12.5ms or 340us"

        def done(text: str | None) -> None:
            t = self.parse_time(text) if text else None
            if t is not None:
                self.goto_time(t)

        self.app.push_screen(
            PromptScreen(
                "Go to time (from the trace start):",
                hint=f"the trace spans {format_ns(self.trace.span_ns)} · bare numbers are ms",
                placeholder="e.g. 31.2ms",
                validate=validate,
            ),
            done,
        )

    def parse_time(self, text: str) -> int | None:
        """A time typed by the user (``12.5ms``; bare numbers are ms) → ns, or None."""
        text = text.strip().lstrip("@")
        try:
            return parse_duration_ns(text, default_unit="ms")
        except ValueError:
            return None
