"""A panel whose analysis is not part of this build yet: it says so plainly instead of showing made-up rows."""

from __future__ import annotations

from rich.text import Text

from gputop_trace.tui.widgets.table_panel import TablePanel


class PendingPanel(TablePanel):
    """Placeholder for the Gaps, Transfers, Ranges and Findings panels until their analyses are wired."""

    has_filter = False

    def __init__(self, title: str, analysis: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title  # type: ignore[misc]
        self.analysis = analysis

    def on_mount(self) -> None:
        self.set_message(
            Text(
                f"The {self.analysis} analysis (analysis/{self.analysis}.py) is not in this build yet, so this panel "
                "has nothing to show.",
                style="yellow",
            )
        )
