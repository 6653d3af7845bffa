"""Panel 6, Findings: the few things to fix first, in words, and the warnings the loader raised. The paragraph of
the highlighted row is shown under the table; Enter jumps to the finding's evidence on the timeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from gputop_trace.safe_text import clean
from gputop_trace.tui.messages import JumpToEvent, JumpToInterval
from gputop_trace.tui.view.analysis_views import FindingItem
from gputop_trace.tui.widgets.figure_static import FigureStatic
from gputop_trace.tui.widgets.table_panel import Column, TablePanel
from gputop_trace.units import format_ns


class FindingsPanel(TablePanel):
    """Findings first (most time at stake first), then warnings."""

    title: ClassVar[str] = "Findings panel"  # type: ignore[misc]
    has_filter: ClassVar[bool] = False

    DEFAULT_CSS = """
    FindingsPanel > DataTable { height: 1fr; }
    FindingsPanel > #finding-detail { height: auto; max-height: 4; padding: 0 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield DataTable(cursor_type="row", zebra_stripes=False, show_cursor=True)
        yield FigureStatic("", id="finding-detail")
        yield FigureStatic("", classes="panel-note")

    def columns(self) -> Sequence[Column]:
        return (
            Column("#", 3),
            Column("at stake", 9),
            Column("share", 6, min_panel=70),
            Column("what", None, right=False),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        f: FindingItem = item
        if f.priority == 0:
            return ("⚠", "", "", Text(clean(f.title), style="yellow"))
        return (
            str(f.priority),
            format_ns(f.time_ns) if f.time_ns else "",
            f"{100 * f.share:.0f}%" if f.share else "",
            Text(clean(f.title)),
        )

    def highlighted(self, item: Any) -> None:
        f: FindingItem = item
        self.query_one("#finding-detail", Static).update(Text(clean(f.detail or f.title)))

    def activate(self, item: Any) -> None:
        f: FindingItem = item
        if f.event >= 0:
            self.post_message(JumpToEvent(f.event, rezoom=True))
        elif f.interval is not None:
            rank, dev = f.gpu if f.gpu is not None else (-1, -1)
            self.post_message(
                JumpToInterval(
                    f.interval[0],
                    f.interval[1],
                    rank=rank,
                    device=dev,
                    label=clean(f.title),
                    details=[("finding", clean(f.detail))],
                )
            )
        else:
            self.app.notify("This row has nothing to show on the timeline.", timeout=3)

    def show(self, findings: list[FindingItem], warnings: Sequence[str], note: str, first: str | None = None) -> None:
        """Fill the table with findings, then one row per loader warning; ``first`` (what the findings cannot see,
        such as ranks of the job that were not loaded) is a warning row above them all."""
        lead = [FindingItem(0, first, first)] if first else []
        items = lead + list(findings) + [FindingItem(0, w, w) for w in warnings]
        if not items:
            self.set_message(note or "No findings and no warnings.")
            self.query_one("#finding-detail", Static).update("")
            return
        self.set_items(items, note)
        current = self.current_item()
        if current is not None:
            self.highlighted(current)
