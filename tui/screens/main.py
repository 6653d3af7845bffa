"""The main screen: the timeline on top; below it the details of the selection or one of the panels (1–9 / Tab);
the status bar and the key footer at the bottom. The timeline's keys are the screen's (``main_keys``) so that they
also work while a panel has the keyboard (a panel's own keys, such as Enter, j/k and / in a table, take precedence);
the panel keys are in ``main_panels``, the critical path's in ``main_path`` (a helper the screen owns). This module
holds the layout, the analyses' results (one handler per result message) and jumps as they arrive, Esc, the rank
comparison and the help."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from gputop_trace.tui.keymap import MAIN_BINDINGS, help_sections
from gputop_trace.tui.messages import (
    AnalysisFailed,
    AnalysisResult,
    CriticalPathReady,
    FindingsReady,
    GapsReady,
    JumpToEvent,
    JumpToInterval,
    JumpToRank,
    KernelsReady,
    NamesReady,
    OpsReady,
    OverviewReady,
    RangeNamesReady,
    RangesReady,
    RanksReady,
    TransfersReady,
)
from gputop_trace.tui.screens.main_keys import TimelineKeys
from gputop_trace.tui.screens.main_panels import PanelKeys
from gputop_trace.tui.widgets.details_pane import DetailsPane
from gputop_trace.tui.widgets.footer import FittingFooter
from gputop_trace.tui.widgets.panel_tabs import PanelTabs
from gputop_trace.tui.widgets.status_bar import StatusBar
from gputop_trace.tui.widgets.timeline import Timeline
from gputop_trace.tui.widgets.timeline_canvas import Interval

if TYPE_CHECKING:
    from gputop_trace.tui.screens.compare import CompareScreen
    from gputop_trace.tui.screens.help import HelpSection
    from gputop_trace.tui.widgets.critical_path_panel import PathSegmentChosen, PathStepChosen


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


class MainScreen(TimelineKeys, PanelKeys):
    """Timeline, details/panels, status bar, footer."""

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

    # ---- worker results: each waits for the panels (see when_panels) -----------------------------------------
    @on(NamesReady)
    def _names_ready(self, message: NamesReady) -> None:
        def show() -> None:
            self.names = message.names

        self.when_panels(show)

    @on(RangeNamesReady)
    def _range_names_ready(self, message: RangeNamesReady) -> None:
        def show() -> None:
            self.range_names = message.range_names

        self.when_panels(show)

    @on(KernelsReady)
    def _kernels_ready(self, message: KernelsReady) -> None:
        def show() -> None:
            from gputop_trace.tui.widgets.kernels_panel import KernelsPanel

            self.kernel_rows = message.rows
            self.query_one(KernelsPanel).set_rows(self.trace, message.rows)

        self.when_panels(show)

    @on(GapsReady)
    def _gaps_ready(self, message: GapsReady) -> None:
        def show() -> None:
            from gputop_trace.tui.view.analysis_views import gap_details
            from gputop_trace.tui.widgets.analysis_panels import GapsPanel

            view = message.view
            self.data.set_gaps(view.marks)
            self.timeline.invalidate()
            compare = self.compare_screen
            if compare is not None and compare.is_mounted:
                compare.compare.invalidate()
            panel = self.query_one(GapsPanel)
            panel.details = partial(gap_details, self.data)
            panel.show(view.items, view.total, view.summary)

        self.when_panels(show)

    @on(TransfersReady)
    def _transfers_ready(self, message: TransfersReady) -> None:
        def show() -> None:
            from gputop_trace.tui.widgets.analysis_panels import TransfersPanel

            view = message.view
            self.query_one(TransfersPanel).show(view.items, view.total, view.summary)

        self.when_panels(show)

    @on(RangesReady)
    def _ranges_ready(self, message: RangesReady) -> None:
        def show() -> None:
            from gputop_trace.tui.widgets.analysis_panels import RangesPanel

            self.query_one(RangesPanel).show(message.rows)

        self.when_panels(show)

    @on(OverviewReady)
    def _overview_ready(self, message: OverviewReady) -> None:
        def show() -> None:
            self.overview = message.overview

        self.when_panels(show)

    @on(FindingsReady)
    def _findings_ready(self, message: FindingsReady) -> None:
        def show() -> None:
            from gputop_trace.tui.widgets.findings_panel import FindingsPanel

            self.query_one(FindingsPanel).show(message.items, self.trace.meta.warnings, "", self._job_note())

        self.when_panels(show)

    @on(OpsReady)
    def _ops_ready(self, message: OpsReady) -> None:
        def show() -> None:
            from gputop_trace.tui.widgets.ops_panel import OpsPanel

            self.query_one(OpsPanel).set_view(message.view)

        self.when_panels(show)

    @on(CriticalPathReady)
    def _critical_path_ready(self, message: CriticalPathReady) -> None:
        self.when_panels(partial(self.critical_path.ready, message.paths))

    @on(RanksReady)
    def _ranks_ready(self, message: RanksReady) -> None:
        def show() -> None:
            from gputop_trace.tui.widgets.ranks_panel import RanksPanel

            self.query_one(RanksPanel).show(message.view)
            compare = self.compare_screen
            if compare is not None and compare.is_mounted and compare.view is None:
                compare.set_view(message.view)

        self.when_panels(show)

    @on(AnalysisFailed)
    def _analysis_failed(self, message: AnalysisFailed) -> None:
        self.when_panels(partial(self._show_failure, message.analysis, message.text))

    def _show_failure(self, analysis: type[AnalysisResult], text: str) -> None:
        """The panel that needed ``analysis``'s result shows ``text`` instead, and a notice says it failed (the
        critical path's failure is in panel 9 and a dialog)."""
        from gputop_trace.tui.widgets.analysis_panels import GapsPanel, RangesPanel, TransfersPanel
        from gputop_trace.tui.widgets.findings_panel import FindingsPanel
        from gputop_trace.tui.widgets.kernels_panel import KernelsPanel
        from gputop_trace.tui.widgets.ops_panel import OpsPanel
        from gputop_trace.tui.widgets.ranks_panel import RanksPanel

        if analysis is CriticalPathReady:
            self.critical_path.failed(text)
            return
        if analysis is KernelsReady:
            self.query_one(KernelsPanel).set_error(text)
        elif analysis is OpsReady:
            self.query_one(OpsPanel).set_error(text)
        elif analysis is RanksReady:
            self.query_one(RanksPanel).set_error(text)
            compare = self.compare_screen
            if compare is not None and compare.is_mounted:
                compare.set_error(text)
        else:
            messages = {GapsReady: GapsPanel, TransfersReady: TransfersPanel, RangesReady: RangesPanel}
            panel = messages.get(analysis) or (FindingsPanel if analysis is FindingsReady else None)
            if panel is not None:
                self.query_one(panel).set_message(Text(text, style="red"))
        self.notify(text, title=f"{analysis.name} analysis failed", severity="error", timeout=10)

    # ---- the critical path (main_path) -----------------------------------------------------------------------
    def action_toggle_path(self) -> None:
        """p: draw the critical path of the step under the cursor on the timeline, or hide it."""
        self.critical_path.toggle()

    def on_path_segment_chosen(self, message: PathSegmentChosen) -> None:
        """Enter on an item of panel 9: the path drawn, its segment selected."""
        message.stop()
        self.critical_path.segment_chosen(message)

    def on_path_step_chosen(self, message: PathStepChosen) -> None:
        """[ / ] in panel 9: that step's path on the timeline too, when it is shown."""
        message.stop()
        self.critical_path.step_chosen(message)

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
        view = self.gputop_app.results.ranks

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
        self.gputop_app.back_to_fleet()

    # ---- help ------------------------------------------------------------------------------------------------
    def help_sections(self) -> list[HelpSection]:
        """Help generated from the bindings active now (focused pane first)."""
        return help_sections(self, MAIN_BINDINGS)

    def action_help(self) -> None:
        """?: the keys of the focused pane and the screen, generated from the bindings."""
        from gputop_trace.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.help_sections()))
