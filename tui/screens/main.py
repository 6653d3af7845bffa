"""The main screen: the timeline on top; below it the details of the selection or one of the panels (1–9 / Tab);
the status bar and the key footer at the bottom. The timeline's keys are the screen's (``main_keys``) so that they
also work while a panel has the keyboard (a panel's own keys, such as Enter, j/k and / in a table, take precedence);
the panel keys are in ``main_panels``. This module holds the layout, the analyses' results and jumps as they arrive,
Esc, the rank comparison and the help."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from gputop_trace.tui.keymap import MAIN_BINDINGS, help_sections
from gputop_trace.tui.messages import (
    AnalysisFailed,
    AnalysisReady,
    JumpToEvent,
    JumpToInterval,
    JumpToRank,
)
from gputop_trace.tui.screens.main_keys import TimelineKeys
from gputop_trace.tui.screens.main_panels import PanelKeys
from gputop_trace.tui.screens.main_path import PathKeys
from gputop_trace.tui.widgets.details_pane import DetailsPane
from gputop_trace.tui.widgets.footer import FittingFooter
from gputop_trace.tui.widgets.panel_tabs import PanelTabs
from gputop_trace.tui.widgets.status_bar import StatusBar
from gputop_trace.tui.widgets.timeline import Timeline
from gputop_trace.tui.widgets.timeline_canvas import Interval

if TYPE_CHECKING:
    from gputop_trace.tui.screens.compare import CompareScreen
    from gputop_trace.tui.screens.help import HelpSection


def panel_widgets() -> list[Widget]:
    """Panels 1–9, in the switcher's order after the details, each with its content id (``panel_tabs.PANELS``).
    Their modules are imported here, not with the screen: they are created after the first screen is drawn
    (:meth:`MainScreen.mount_panels`)."""
    from gputop_trace.tui.widgets.analysis_panels import GapsPanel, RangesPanel, TransfersPanel
    from gputop_trace.tui.widgets.critical_path_panel import CriticalPathPanel
    from gputop_trace.tui.widgets.drilldown import DrilldownPanel
    from gputop_trace.tui.widgets.findings_panel import FindingsPanel
    from gputop_trace.tui.widgets.kernels_panel import KernelsPanel
    from gputop_trace.tui.widgets.ops_panel import OpsPanel
    from gputop_trace.tui.widgets.ranks_panel import RanksPanel

    return [
        KernelsPanel(id="kernels"),
        GapsPanel(id="gaps"),
        TransfersPanel(id="transfers"),
        RangesPanel(id="ranges"),
        DrilldownPanel(id="drilldown"),
        FindingsPanel(id="findings"),
        RanksPanel(id="ranks"),
        OpsPanel(id="ops"),
        CriticalPathPanel(id="path"),
    ]


class MainScreen(TimelineKeys, PathKeys, PanelKeys):
    """Timeline, details/panels, status bar, footer."""

    DEFAULT_CSS = """
    MainScreen { layout: vertical; }
    MainScreen > #bottom { height: 38%; min-height: 6; border-top: solid $panel-lighten-2; }
    MainScreen > #bottom.-panel { height: 55%; min-height: 9; }
    MainScreen #switcher { height: 1fr; }
    MainScreen #switcher > * { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = MAIN_BINDINGS

    # ---- layout ----------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Timeline(self.data, flows=self.flows, id="timeline")
        with Vertical(id="bottom"):
            yield PanelTabs(id="tabs")
            with ContentSwitcher(initial="details", id="switcher"):
                yield DetailsPane(id="details")
        yield StatusBar(id="status")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.timeline.focus()
        self.query_one(PanelTabs).show(self.panel)
        self.refresh_status()
        self.refresh_details()
        # results that arrived before this screen was mounted (they wait for the panels, see when_panels)
        app: Any = self.app
        for name, result in dict(getattr(app, "results", {})).items():
            self.on_analysis_ready(AnalysisReady(name, result))
        for name, text in dict(getattr(app, "failures", {})).items():
            self.on_analysis_failed(AnalysisFailed(name, text))
        self.call_after_refresh(self.mount_panels)

    async def mount_panels(self) -> None:
        """Create panels 1–9 once the first screen is drawn: composing and mounting them (tables, plots, the
        drill-down's form) and importing their modules took about 0.2 s before the first frame. What asked for
        a panel in the meantime (a key, a result) runs once they are mounted (:meth:`when_panels`)."""
        from gputop_trace.tui.widgets.analysis_panels import GapsPanel, RangesPanel, TransfersPanel
        from gputop_trace.tui.widgets.critical_path_panel import CriticalPathPanel
        from gputop_trace.tui.widgets.findings_panel import FindingsPanel
        from gputop_trace.tui.widgets.ranks_panel import RanksPanel

        panels = panel_widgets()
        for panel in panels:
            panel.display = False  # the switcher shows the details until a panel is asked for
        await self.query_one("#switcher", ContentSwitcher).mount_all(panels)
        if not self.is_attached:
            return
        for analysing in (self.query_one(GapsPanel), self.query_one(TransfersPanel), self.query_one(RangesPanel)):
            analysing.set_message(Text("analysing…", style="dim"))
        self.query_one(FindingsPanel).show(
            [], self.trace.meta.warnings, "analysing… (the loader's warnings are below)", self._job_note()
        )
        self.query_one(RanksPanel).set_message(Text("comparing ranks…", style="dim"))
        self.query_one(CriticalPathPanel).set_message(
            Text("The critical path of each step is worked out when you first ask: p or this panel.", style="dim")
        )
        self.panels_mounted()

    def _job_note(self) -> str | None:
        """What the findings cannot see: the ranks of the job that were not loaded (None when all were)."""
        from gputop_trace.analysis.ranks.job import job_coverage

        job = job_coverage(self.trace.meta)
        return job.note if job is not None else None

    def on_resize(self) -> None:
        self.query_one(PanelTabs).show(self.panel)
        self.refresh_status()

    def on_timeline_changed(self, message: Timeline.Changed) -> None:
        self.refresh_status()
        if message.selection or self.timeline.selected < 0:
            self.refresh_details()

    # ---- worker results --------------------------------------------------------------------------------------
    def on_analysis_ready(self, message: AnalysisReady) -> None:
        if not self.panels_ready:
            self.when_panels(partial(self.on_analysis_ready, message))
            return
        from gputop_trace.tui.view.analysis_views import gap_details
        from gputop_trace.tui.widgets.analysis_panels import GapsPanel, RangesPanel, TransfersPanel
        from gputop_trace.tui.widgets.findings_panel import FindingsPanel
        from gputop_trace.tui.widgets.kernels_panel import KernelsPanel
        from gputop_trace.tui.widgets.ops_panel import OpsPanel
        from gputop_trace.tui.widgets.ranks_panel import RanksPanel

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
        elif message.name == "overview":
            self.overview = message.result
            self.refresh_details()
        elif message.name == "findings":
            self.query_one(FindingsPanel).show(message.result, self.trace.meta.warnings, "", self._job_note())
        elif message.name == "ops":
            self.query_one(OpsPanel).set_view(message.result)
        elif message.name == "critical_path":
            self.path_ready(message.result)
        elif message.name == "ranks":
            self.query_one(RanksPanel).show(message.result)
            compare = self.compare_screen
            if compare is not None and compare.is_mounted and compare.view is None:
                compare.set_view(message.result)

    def on_analysis_failed(self, message: AnalysisFailed) -> None:
        if not self.panels_ready:
            self.when_panels(partial(self.on_analysis_failed, message))
            return
        from gputop_trace.tui.widgets.analysis_panels import GapsPanel, RangesPanel, TransfersPanel
        from gputop_trace.tui.widgets.findings_panel import FindingsPanel
        from gputop_trace.tui.widgets.kernels_panel import KernelsPanel
        from gputop_trace.tui.widgets.ops_panel import OpsPanel
        from gputop_trace.tui.widgets.ranks_panel import RanksPanel

        panels: dict[str, Any] = {
            "gaps": GapsPanel,
            "transfers": TransfersPanel,
            "ranges": RangesPanel,
            "findings": FindingsPanel,
        }
        if message.name == "critical_path":
            self.path_failed(message.text)
            return
        if message.name == "kernels":
            self.query_one(KernelsPanel).set_error(message.text)
        elif message.name == "ops":
            self.query_one(OpsPanel).set_error(message.text)
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

    # ---- ranks side by side ----------------------------------------------------------------------------------
    @property
    def compare_screen(self) -> CompareScreen | None:
        """The rank comparison, while it is open."""
        from gputop_trace.tui.screens.compare import CompareScreen

        return next((s for s in self.app.screen_stack if isinstance(s, CompareScreen)), None)

    def action_compare_ranks(self) -> None:
        """R: the step under the cursor on every rank, side by side (needs two ranks or more)."""
        from gputop_trace.tui.screens.compare import CompareAnchor, CompareScreen, ShowRank

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

        self.app.push_screen(CompareScreen(self.data, view, anchor), shown)

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
        from gputop_trace.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.help_sections()))
