"""The main screen's state (the trace, the analyses that arrived, the search, the panel shown, the critical path's
helper) and what keeps the status bar and the details pane up to date; the key actions and the screen itself
build on it (``main_keys``, ``main_panels``, ``main``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import ContentSwitcher

from gputop_trace.model.arrays import I64
from gputop_trace.model.trace import Trace
from gputop_trace.safe_text import clean
from gputop_trace.tui.screens.main_path import PathOnScreen
from gputop_trace.tui.view.lanes import RowKind
from gputop_trace.tui.view.navigation import FlowIndex, NameIndex, position_in
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.widgets.details_pane import DetailsPane
from gputop_trace.tui.widgets.panel_tabs import PanelTabs
from gputop_trace.tui.widgets.status_bar import StatusBar, status_text
from gputop_trace.tui.widgets.timeline import Timeline
from gputop_trace.units import format_ns

if TYPE_CHECKING:
    from gputop_trace.tui.hosts import TraceApp
    from gputop_trace.tui.view.overview import Overview


class MainState(Screen[None]):
    """The main screen's state, its timeline, the status bar and the details of the selection."""

    #: the index of event names, once built (``n`` / ``N``, the details' instance counts)
    names: reactive[NameIndex | None] = reactive(None, init=False, repaint=False)
    #: where the time went, shown in the details while nothing is selected, once the analyses have worked it out
    overview: reactive[Overview | None] = reactive(None, init=False, repaint=False)

    def __init__(self, trace: Trace, data: TimelineData, flows: FlowIndex, paths: list[str]) -> None:
        super().__init__()
        self.trace = trace
        self.data = data
        self.flows = flows
        self.paths = paths
        self.kernel_rows: list[Any] | None = None
        self.range_names: list[Any] = []
        self.panel = "details"
        self.search_pattern = ""
        self.matches: I64 | None = None
        self.match_starts: I64 | None = None
        #: whether panels 1–9 are mounted (they are created after the first screen is drawn)
        self.panels_ready = False
        self._after_panels: list[Callable[[], None]] = []
        #: the critical path on this screen: ``p``, ``n`` / ``N`` on it, panel 9
        self.critical_path = PathOnScreen(self, self)

    @property
    def gputop_app(self) -> TraceApp:
        """The app, typed (this screen is only ever the trace browser's)."""
        return cast("TraceApp", self.app)

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    def watch_names(self) -> None:
        self.refresh_details()

    def watch_overview(self) -> None:
        self.refresh_details()

    def show_panel(self, name: str) -> None:
        """Show a panel (or the details) below the timeline and give it the keyboard (a panel asked for before
        the panels are mounted is shown once they are). Panel 9 asks for the critical path first."""
        if name == "path":
            self.critical_path.start()
        if name != "details" and not self.panels_ready:
            self.when_panels(lambda: self.show_panel(name))
            return
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

    def when_panels(self, call: Callable[[], None]) -> None:
        """Run ``call`` (something that uses panels 1–9) now when the panels are mounted, else once they are, in
        the order asked."""
        if self.panels_ready:
            call()
        else:
            self._after_panels.append(call)

    def panels_mounted(self) -> None:
        """The panels are mounted: run what waited for them."""
        self.panels_ready = True
        waiting, self._after_panels = self._after_panels, []
        for call in waiting:
            call()

    def select_and_show(self, event: int, *, rezoom: bool = False) -> None:
        """Select ``event`` from a timeline key or the palette: centred on the timeline, its details below (the
        panel that was open gives way to them)."""
        if self.panel != "details":
            self.show_panel("details")
        self.timeline.select(event, rezoom=rezoom)

    # ---- status and details ----------------------------------------------------------------------------------
    def search_status(self) -> str:
        """The status bar's search part (``/pattern/ 2/15 matches``), with the critical path's while it is shown."""
        return self.critical_path.status(self._matches_status())

    def _matches_status(self) -> str:
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
            pane.show_event(
                self.data, tl.selected, names=self.names, flows=self.flows, lead=self.critical_path.lead(tl.selected)
            )
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
            multi = len({ln.rank for ln in self.trace.lanes}) > 1
            width = max(20, (pane.size.width or self.size.width or 80) - 3)  # the pane's padding and scroll bar
            top = None
            if self.overview is not None:
                from gputop_trace.tui.view.overview import overview_text

                top = overview_text(self.overview, multi_rank=multi, width=width)
            if info is None or line is None:
                pane.show_hint(None, overview=top)
            elif line.kind == RowKind.UTIL:
                pane.show_hint(None, util=(info.fraction, info.t0, info.t1), overview=top)
            else:
                label = self.data.label(info.event) if info.event >= 0 else ""
                pane.show_hint((info.count, info.fraction, label, info.t0, info.t1), overview=top)
