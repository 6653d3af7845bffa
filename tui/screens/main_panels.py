"""The panels below the main screen's timeline: switching between them (1–9, Tab), scrolling the details, and the
glue to the ncu drill-down and the findings export."""

from __future__ import annotations

import os

from textual import work

from gputop_trace.errors import TraceError
from gputop_trace.model.kinds import Kind
from gputop_trace.tui.messages import DrilldownRequested
from gputop_trace.tui.screens.main_state import MainState
from gputop_trace.tui.widgets.details_pane import DetailsPane
from gputop_trace.tui.widgets.panel_tabs import CYCLE


class PanelKeys(MainState):
    """Panel switching, and the drill-down and export the keys start."""

    # ---- panels ----------------------------------------------------------------------------------------------
    def action_open_finding(self, index: int) -> None:
        """A click on the overview's finding ``index`` (0-based, findings only): its evidence on the timeline."""
        from gputop_trace.tui.widgets.findings_panel import FindingsPanel

        found = [f for f in (self.overview.findings if self.overview is not None else []) if f.priority > 0]
        if 0 <= index < len(found):
            self.when_panels(lambda: self.query_one(FindingsPanel).activate(found[index]))

    def action_panel(self, name: str) -> None:
        """Show panel ``name``; pressing its number again goes back to the details."""
        self.show_panel("details" if self.panel == name else name)

    def action_cycle_panel(self, step: int) -> None:
        """Tab / Shift+Tab: the next or previous panel."""
        i = CYCLE.index(self.panel)
        self.show_panel(CYCLE[(i + step) % len(CYCLE)])

    def action_scroll_details(self, direction: int) -> None:
        """Scroll the details pane by half its height."""
        pane = self.query_one(DetailsPane)
        if self.panel != "details":
            self.show_panel("details")
        pane.scroll_relative(y=direction * max(1, pane.size.height // 2), animate=False)

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
        from gputop_trace.tui.screens.dialogs import PromptScreen
        from gputop_trace.tui.view.export import DEFAULT_EXPORT, export_path

        confirmed: list[str] = []  # the existing path the user has agreed to overwrite (Enter twice)

        def validate(text: str) -> str | None:
            path = export_path(text)[0]
            if os.path.exists(path) and confirmed != [path]:
                confirmed[:] = [path]
                return f"{path} exists: Enter again overwrites it, or change the name"
            return None

        def describe(text: str) -> str:
            path, fmt = export_path(text)
            return f"writes {fmt} to {path}"

        def done(text: str | None) -> None:
            if text is not None:
                self.run_export(text)

        self.app.push_screen(
            PromptScreen(
                "Export findings to (a .md file for Markdown, .json for JSON):",
                value=DEFAULT_EXPORT,
                hint="Enter writes · Esc cancels",
                validate=validate,
                describe=describe,
            ),
            done,
        )

    @work(thread=True, exclusive=True, group="export")
    def run_export(self, text: str) -> None:
        from gputop_trace.tui.view.export import export_path, findings_document, write_export

        path, fmt = export_path(text)
        try:
            doc = findings_document(self.trace, self.paths, self.gputop_app.results.summary)
            size = write_export(path, fmt, doc)
        except OSError as e:
            self.app.call_from_thread(
                self.notify, f"Could not write {path}: {e.strerror or e}", title="Export failed", severity="error"
            )
            return
        self.app.call_from_thread(
            self.notify, f"Wrote {fmt} findings ({size:,} bytes) to {path}", title="Exported", timeout=8
        )

    def on_drilldown_requested(self, message: DrilldownRequested) -> None:
        """Show panel 5 and let the drill-down confirm and run ncu for the requested launch."""
        from gputop_trace.tui.widgets.drilldown import DrilldownPanel

        def start() -> None:
            self.show_panel("drilldown")
            self.query_one(DrilldownPanel).start(message.request)

        self.when_panels(start)
