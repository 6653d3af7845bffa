"""The main screen: the timeline on top; below it the details of the selection or one of the panels (1–7 / Tab);
the status bar and the key footer at the bottom. The timeline's keys live here so that they also work while a
panel has the keyboard (a panel's own keys, such as Enter, j/k and / in a table, take precedence)."""

from __future__ import annotations

import os
import re
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer

from gputop_trace.errors import TraceError
from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.safe_text import clean
from gputop_trace.tui.keymap import MAIN_BINDINGS, help_sections
from gputop_trace.tui.messages import (
    AnalysisFailed,
    AnalysisReady,
    DrilldownRequested,
    JumpToEvent,
    JumpToInterval,
    JumpToRank,
)
from gputop_trace.tui.screens.compare import CompareAnchor, CompareScreen, ShowRank
from gputop_trace.tui.screens.dialogs import PromptScreen
from gputop_trace.tui.screens.help import HelpScreen, HelpSection
from gputop_trace.tui.view.analysis_views import gap_details
from gputop_trace.tui.view.lanes import RowKind
from gputop_trace.tui.view.navigation import (
    FlowIndex,
    NameIndex,
    compile_search,
    position_in,
    search_events,
    step_in_sorted,
)
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.widgets.analysis_panels import GapsPanel, RangesPanel, TransfersPanel
from gputop_trace.tui.widgets.details_pane import DetailsPane
from gputop_trace.tui.widgets.drilldown import DrilldownPanel
from gputop_trace.tui.widgets.findings_panel import FindingsPanel
from gputop_trace.tui.widgets.kernels_panel import KernelsPanel
from gputop_trace.tui.widgets.panel_tabs import CYCLE, PanelTabs
from gputop_trace.tui.widgets.ranks_panel import RanksPanel
from gputop_trace.tui.widgets.status_bar import StatusBar, status_text
from gputop_trace.tui.widgets.timeline import Timeline
from gputop_trace.tui.widgets.timeline_canvas import Interval
from gputop_trace.units import format_ns, parse_duration_ns


class SearchDone(Message):
    """The search worker finished: the events matching ``pattern`` sorted by start."""

    def __init__(self, pattern: str, matches: I64, starts: I64) -> None:
        super().__init__()
        self.pattern = pattern
        self.matches = matches
        self.starts = starts


class MainScreen(Screen[None]):
    """Timeline, details/panels, status bar, footer."""

    DEFAULT_CSS = """
    MainScreen { layout: vertical; }
    MainScreen > #bottom { height: 38%; min-height: 6; border-top: solid $panel-lighten-2; }
    MainScreen > #bottom.-panel { height: 55%; min-height: 9; }
    MainScreen #switcher { height: 1fr; }
    MainScreen #switcher > * { height: 1fr; }
    """

    BINDINGS: ClassVar[list[Binding]] = MAIN_BINDINGS  # type: ignore[assignment]

    def __init__(self, trace: Trace, data: TimelineData, flows: FlowIndex, paths: list[str], *, mono: bool) -> None:
        super().__init__()
        self.trace = trace
        self.data = data
        self.flows = flows
        self.paths = paths
        self.mono = mono
        self.names: NameIndex | None = None
        self.kernel_rows: list[Any] | None = None
        self.range_names: list[Any] = []
        self.panel = "details"
        self.search_pattern = ""
        self.matches: I64 | None = None
        self.match_starts: I64 | None = None
        self.results: dict[str, Any] = {}

    # ---- layout ----------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Timeline(self.data, flows=self.flows, mono=self.mono, id="timeline")
        with Vertical(id="bottom"):
            yield PanelTabs(id="tabs")
            with ContentSwitcher(initial="details", id="switcher"):
                yield DetailsPane(id="details")
                yield KernelsPanel(id="kernels")
                yield GapsPanel(id="gaps")
                yield TransfersPanel(id="transfers")
                yield RangesPanel(id="ranges")
                yield DrilldownPanel(id="drilldown")
                yield FindingsPanel(id="findings")
                yield RanksPanel(id="ranks")
        yield StatusBar(id="status")
        yield Footer(compact=True)

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    def on_mount(self) -> None:
        self.timeline.focus()
        self.query_one(PanelTabs).show(self.panel)
        self.refresh_status()
        self.refresh_details()
        for panel in (self.query_one(GapsPanel), self.query_one(TransfersPanel), self.query_one(RangesPanel)):
            panel.set_message(Text("analysing…", style="dim"))
        self.query_one(FindingsPanel).show([], self.trace.meta.warnings, "analysing… (the loader's warnings are below)")
        self.query_one(RanksPanel).set_message(Text("comparing ranks…", style="dim"))
        # results that arrived before this screen was mounted
        app: Any = self.app
        for name, result in dict(getattr(app, "results", {})).items():
            self.on_analysis_ready(AnalysisReady(name, result))
        for name, text in dict(getattr(app, "failures", {})).items():
            self.on_analysis_failed(AnalysisFailed(name, text))

    def on_resize(self) -> None:
        self.query_one(PanelTabs).show(self.panel)
        self.refresh_status()

    # ---- status and details ----------------------------------------------------------------------------------
    def search_status(self) -> str:
        if not self.search_pattern or self.matches is None:
            return ""
        n = len(self.matches)
        sel = self.timeline.selected
        pos = ""
        if n and sel >= 0:
            assert self.match_starts is not None
            p = position_in(self.matches, self.match_starts, sel, int(self.trace.start_ns[sel]))
            if p >= 0:
                pos = f"{p + 1}/"
        return f"/{clean(self.search_pattern)}/ {pos}{n:,} match{'es' if n != 1 else ''}"

    def refresh_status(self) -> None:
        tl = self.timeline
        width = self.size.width or 80
        self.query_one(StatusBar).update(
            status_text(
                self.trace,
                self.paths,
                width=width,
                window_ns=tl.t1 - tl.t0,
                cursor_ns=tl.cursor_t,
                search=self.search_status(),
            )
        )

    def refresh_details(self) -> None:
        tl = self.timeline
        pane = self.query_one(DetailsPane)
        if tl.selected >= 0:
            pane.show_event(self.data, tl.selected, names=self.names, flows=self.flows)
        elif tl.interval is not None:
            iv = tl.interval
            rows = list(iv.details) or [
                ("from", format_ns(iv.start, precision=6)),
                ("length", format_ns(iv.end - iv.start)),
            ]
            pane.show_rows(iv.label or "interval", rows)
        else:
            info = tl.cell_at_cursor()
            line = tl.current_line
            if info is None or line is None:
                pane.show_hint(None)
            elif line.kind == RowKind.UTIL:
                pane.show_hint(None, util=(info.fraction, info.t0, info.t1))
            else:
                label = self.data.label(info.event) if info.event >= 0 else ""
                pane.show_hint((info.count, info.fraction, label, info.t0, info.t1))

    def on_timeline_changed(self, message: Timeline.Changed) -> None:
        self.refresh_status()
        if message.selection or self.timeline.selected < 0:
            self.refresh_details()

    # ---- worker results --------------------------------------------------------------------------------------
    def on_analysis_ready(self, message: AnalysisReady) -> None:
        self.results[message.name] = message.result
        if message.name == "names":
            self.names = message.result
            self.refresh_details()
        elif message.name == "range_names":
            self.range_names = message.result
        elif message.name == "kernels":
            self.kernel_rows = message.result
            self.query_one(KernelsPanel).set_rows(self.trace, message.result)
        elif message.name == "gaps":
            view = message.result
            self.data.set_gaps(view.marks)
            self.timeline.invalidate()
            compare = self.compare_screen
            if compare is not None and compare.is_mounted:
                compare.compare.invalidate()
            panel = self.query_one(GapsPanel)
            panel.details = partial(gap_details, self.data)
            panel.show(view.items, view.total, view.summary)
        elif message.name == "transfers":
            view = message.result
            self.query_one(TransfersPanel).show(view.items, view.total, view.summary)
        elif message.name == "ranges":
            self.query_one(RangesPanel).show(message.result)
        elif message.name == "findings":
            self.query_one(FindingsPanel).show(message.result, self.trace.meta.warnings, "")
        elif message.name == "ranks":
            self.query_one(RanksPanel).show(message.result)
            compare = self.compare_screen
            if compare is not None and compare.is_mounted and compare.view is None:
                compare.set_view(message.result)

    def on_analysis_failed(self, message: AnalysisFailed) -> None:
        panels: dict[str, Any] = {
            "gaps": GapsPanel,
            "transfers": TransfersPanel,
            "ranges": RangesPanel,
            "findings": FindingsPanel,
        }
        if message.name == "kernels":
            self.query_one(KernelsPanel).set_error(message.text)
        elif message.name == "ranks":
            self.query_one(RanksPanel).set_error(message.text)
            compare = self.compare_screen
            if compare is not None and compare.is_mounted:
                compare.set_error(message.text)
        elif message.name in panels:
            self.query_one(panels[message.name]).set_message(Text(message.text, style="red"))
        self.notify(message.text, title=f"{message.name} analysis failed", severity="error", timeout=10)

    def on_jump_to_event(self, message: JumpToEvent) -> None:
        message.stop()
        self.timeline.select(message.event, rezoom=message.rezoom)

    def on_jump_to_interval(self, message: JumpToInterval) -> None:
        message.stop()
        details = tuple(message.details or ())
        self.timeline.select_interval(
            Interval(message.start, message.end, message.rank, message.device, message.label, details)
        )

    def on_jump_to_rank(self, message: JumpToRank) -> None:
        message.stop()
        if not self.timeline.reveal_rank(message.rank):
            self.notify(f"Rank {message.rank} has no lanes to show.", timeout=3)

    def on_drilldown_requested(self, message: DrilldownRequested) -> None:
        """Show panel 5 and let the drill-down confirm and run ncu for the requested launch."""
        self.show_panel("drilldown")
        self.query_one(DrilldownPanel).start(message.request)

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
        if not tl.step_event(direction):
            self.notify("No more events in this lane row.", timeout=2)

    def action_scroll_details(self, direction: int) -> None:
        """Scroll the details pane by half its height."""
        pane = self.query_one(DetailsPane)
        if self.panel != "details":
            self.show_panel("details")
        pane.scroll_relative(y=direction * max(1, pane.size.height // 2), animate=False)

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
        """n / N: walk the search matches, or the instances of the selected event's name."""
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
        tl.select(nxt)

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
        tl.select(int(partners[0]))

    # ---- ranks side by side ----------------------------------------------------------------------------------
    @property
    def compare_screen(self) -> CompareScreen | None:
        """The rank comparison, while it is open."""
        return next((s for s in self.app.screen_stack if isinstance(s, CompareScreen)), None)

    def action_compare_ranks(self) -> None:
        """R: the step under the cursor on every rank, side by side (needs two ranks or more)."""
        ranks = sorted({ln.rank for ln in self.trace.lanes})
        if len(ranks) < 2:
            self.notify(
                "This trace has one rank: there is nothing to compare side by side. Open a directory of per-rank "
                "traces, or an nsys export of several processes.",
                title="Ranks side by side",
                timeout=5,
            )
            return
        tl = self.timeline
        line = tl.current_line
        rank = line.rank if line is not None and line.rank in ranks else ranks[0]
        anchor = CompareAnchor(rank, tl.cursor_t, (tl.t0, tl.t1))
        view = self.results.get("ranks")

        def shown(result: ShowRank | None) -> None:
            if result is not None:
                tl.show_rank_interval(result.rank, result.start, result.end, result.cursor)

        self.app.push_screen(CompareScreen(self.data, view, anchor, mono=self.mono), shown)

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

    # ---- drill-down and export -------------------------------------------------------------------------------
    def action_drilldown(self) -> None:
        """c: ask the ncu drill-down to profile the selected kernel."""
        tl = self.timeline
        if tl.selected < 0 or int(self.trace.kind[tl.selected]) != Kind.KERNEL:
            self.notify("Select a kernel first (Enter on a kernel, or a row of the Kernels panel).", timeout=3)
            return
        from gputop_trace.ncu.drilldown import request_for_event

        try:
            request = request_for_event(self.trace, tl.selected, self.paths[0] if len(self.paths) == 1 else None)
        except TraceError as e:
            self.notify(e.message, severity="warning", timeout=5)
            return
        self.post_message(DrilldownRequested(request))

    def action_export(self) -> None:
        """e: write the findings as Markdown or JSON."""
        from gputop_trace.tui.view.export import DEFAULT_EXPORT

        def done(text: str | None) -> None:
            if text is not None:
                self.run_export(text)

        self.app.push_screen(
            PromptScreen(
                "Export findings to (a .md file for Markdown, .json for JSON):",
                value=DEFAULT_EXPORT,
                hint=f"relative paths are in {os.getcwd()} · Enter writes · Esc cancels",
            ),
            done,
        )

    @work(thread=True, exclusive=True, group="export")
    def run_export(self, text: str) -> None:
        from gputop_trace.tui.view.export import export_path, findings_document, write_export

        path, fmt = export_path(text)
        try:
            doc = findings_document(self.trace, self.paths, getattr(self.app, "summary_analyses", None))
            size = write_export(path, fmt, doc)
        except OSError as e:
            self.app.call_from_thread(
                self.notify, f"Could not write {path}: {e.strerror or e}", title="Export failed", severity="error"
            )
            return
        self.app.call_from_thread(
            self.notify, f"Wrote {fmt} findings ({size:,} bytes) to {path}", title="Exported", timeout=8
        )

    # ---- panels ----------------------------------------------------------------------------------------------
    def show_panel(self, name: str) -> None:
        """Show a panel (or the details) below the timeline and give it the keyboard."""
        self.panel = name
        self.query_one("#bottom").set_class(name != "details", "-panel")
        self.query_one("#switcher", ContentSwitcher).current = name
        self.query_one(PanelTabs).show(name)
        if name == "details":
            self.timeline.focus()
            self.refresh_details()
            return
        widget = self.query_one(f"#{name}")
        focus = getattr(widget, "focus_table", None)
        if callable(focus):
            focus()
        else:
            # a focusable part of the panel takes the keyboard, so that the panel's own keys apply while it is
            # shown (the drill-down's x cancels ncu there); the timeline otherwise
            inner = next((w for w in widget.query("*") if w.focusable and w.display), None)
            (inner or self.timeline).focus()

    def action_panel(self, name: str) -> None:
        """Show panel ``name``; pressing its number again goes back to the details."""
        self.show_panel("details" if self.panel == name else name)

    def action_cycle_panel(self, step: int) -> None:
        """Tab / Shift+Tab: the next or previous panel."""
        i = CYCLE.index(self.panel)
        self.show_panel(CYCLE[(i + step) % len(CYCLE)])

    def action_back(self) -> None:
        """Esc: leave a filter, then a panel, then the search, then the selection; then back to the fleet screen
        when the trace was opened from one."""
        if self.panel != "details":
            widget = self.query_one(f"#{self.panel}")
            leave = getattr(widget, "leave_filter", None)
            if callable(leave) and leave():
                return
            self.show_panel("details")
            return
        if self.search_pattern:
            self.clear_search()
            self.notify("Search cleared; n / N walk instances of the selected name again.", timeout=2)
            return
        if self.timeline.selected >= 0 or self.timeline.interval is not None:
            self.timeline.select(-1, reveal=False)
            return
        back = getattr(self.app, "back_to_fleet", None)
        if callable(back):
            back()

    # ---- help ------------------------------------------------------------------------------------------------
    def help_sections(self) -> list[HelpSection]:
        """Help generated from the bindings active now (focused pane first)."""
        return help_sections(self, MAIN_BINDINGS)

    def action_help(self) -> None:
        """?: the keys of the focused pane and the screen, generated from the bindings."""
        self.app.push_screen(HelpScreen(self.help_sections(), mono=self.mono))

    # ---- palette support -------------------------------------------------------------------------------------
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
