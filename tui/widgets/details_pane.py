"""The details pane: the selected event (or interval) in full, or, with nothing selected, where the time went
(the overview), what the cursor's cell holds and how to select something."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from gputop_trace.tui.view.details import describe_event, details_text
from gputop_trace.tui.view.navigation import FlowIndex, NameIndex
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.units import format_ns, plural

HINT = (
    "Nothing selected. Enter selects the event under the cursor ▼ (move it with , and .); [ ] step through the "
    "lane; n N walk a kernel's instances; x follows launch ↔ kernel; / searches; 1–8 open panels; ? help."
)


class DetailsPane(VerticalScroll, can_focus=False):
    """Shows one event, one interval or a hint."""

    DEFAULT_CSS = """
    DetailsPane { height: 1fr; padding: 0 1; }
    """

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(Text(HINT), id="details-body")

    @property
    def body(self) -> Static:
        return self.query_one("#details-body", Static)

    def show_event(
        self, data: TimelineData, event: int, *, names: NameIndex | None = None, flows: FlowIndex | None = None
    ) -> None:
        """Describe ``event``."""
        title, rows = describe_event(data, event, names=names, flows=flows)
        self.body.update(details_text(title, rows))
        self.scroll_home(animate=False)

    def show_rows(self, title: str, rows: list[tuple[str, str]]) -> None:
        """Describe something that is not one event (an idle gap, a range)."""
        self.body.update(details_text(title, rows))
        self.scroll_home(animate=False)

    def show_hint(
        self,
        cell: tuple[int, float, str, int, int] | None = None,
        *,
        util: tuple[float, int, int] | None = None,
        overview: Text | None = None,
    ) -> None:
        """The hint, with what the cursor's cell holds: ``(count, busy fraction, dominant label, t0, t1)`` on a
        lane, ``(busy fraction, t0, t1)`` on a GPU's busy strip; ``overview`` (where the time went) comes first."""
        text = Text(HINT, style="dim")
        if util is not None:
            frac, t0, t1 = util
            line = Text(f"cursor cell {format_ns(t0, precision=6)} – {format_ns(t1, precision=6)}: ")
            trace = getattr(self.app, "trace", None)
            busy = f"GPU busy {100 * frac:.0f}% of the cell" if frac > 0 else "GPU idle"
            line.append(trace.device_words().say(busy) if trace is not None else busy)
            text = line + Text("\n") + text
        elif cell is not None:
            count, frac, label, t0, t1 = cell
            line = Text(f"cursor cell {format_ns(t0, precision=6)} – {format_ns(t1, precision=6)}: ")
            if count:
                line.append(f"{plural(count, 'event')}, {100 * frac:.0f}% busy, mostly ")
                line.append(label, style="bold")
            else:
                line.append("empty")
            text = line + Text("\n") + text
        if overview is not None:
            text = overview + Text("\n") + text
        self.body.update(text)
