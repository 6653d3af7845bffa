"""The details pane: the selected event (or interval) in full, or, with nothing selected, where the time went
(the overview), what the cursor's cell holds and how to select something. Its text never breaks a line between a
figure and its unit (``presentation/figure_wrap.py``)."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.containers import VerticalScroll
from textual.content import Content
from textual.css.styles import RulesMap
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual.widgets import Static

from gputop_trace.presentation.figure_wrap import break_offsets
from gputop_trace.tui.hosts import shown_trace
from gputop_trace.tui.view.details import describe_event, details_text
from gputop_trace.tui.view.navigation import FlowIndex, NameIndex
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.units import format_ns, plural

HINT = (
    "Nothing selected. Enter selects the event under the cursor ▼ (move it with , and .); [ ] step through the "
    "lane; n N walk a kernel's instances; x follows launch ↔ kernel; / searches; p shows the critical path; "
    "1–9 open panels; ? help."
)


class FiguresKeptWhole(Visual):
    """Text that wraps as Textual wraps a ``Static``'s text, except between a figure and its unit or a count and
    its noun (``presentation/figure_wrap.py``): the text is broken into lines for the width it is drawn at, and
    those lines drawn; where the style says ``text-wrap: nowrap`` it is drawn as any text is."""

    def __init__(self, content: Content) -> None:
        self.content = content
        self._wrapped: tuple[int, Content] | None = None

    def wrapped(self, width: int) -> Content:
        """The text with a newline wherever it breaks at ``width`` cells."""
        if self._wrapped is None or self._wrapped[0] != width:
            lines: list[Content] = []
            for line in self.content.split(allow_blank=True):
                *broken, last = line.divide(break_offsets(line.plain, width))
                lines += [part.rstrip() for part in broken]  # as Textual does: no trailing space where it broke
                lines.append(last)
            self._wrapped = (width, Content("\n").join(lines))
        return self._wrapped[1]

    @property
    def last_wrapped(self) -> Content:
        """The lines as last drawn (what a mouse selection's coordinates refer to)."""
        return self._wrapped[1] if self._wrapped is not None else self.content

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        if options.rules.get("text_wrap", "wrap") == "nowrap":  # a one-line note: cut as the style says
            return self.content.render_strips(width, height, style, options)
        pad = int(options.rules.get("line_pad", 0))
        return self.wrapped(width - 2 * pad).render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.content.get_optimal_width(rules, container_width)

    def get_height(self, rules: RulesMap, width: int) -> int:
        if rules.get("text_wrap", "wrap") == "nowrap":
            return self.content.get_height(rules, width)
        pad = int(rules.get("line_pad", 0))
        return self.wrapped(width - 2 * pad).get_height(rules, width)


class DetailsBody(Static):
    """The pane's text, figures kept whole; a selection copies the lines as drawn."""

    def show(self, text: Text | Group) -> None:
        """Text is wrapped here; a details block (``view.details.details_text``) is laid out by Rich, its values
        ``FigureText`` that wraps alike."""
        if isinstance(text, Text):
            self.update(FiguresKeptWhole(Content.from_rich_text(text, console=self.app.console)))
        else:
            self.update(text)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        visual = self.visual
        if isinstance(visual, FiguresKeptWhole):
            return selection.extract(visual.last_wrapped.plain), "\n"
        return super().get_selection(selection)


class DetailsPane(VerticalScroll, can_focus=False):
    """Shows one event, one interval or a hint."""

    DEFAULT_CSS = """
    DetailsPane { height: 1fr; padding: 0 1; }
    """

    def compose(self):  # type: ignore[no-untyped-def]
        yield DetailsBody(FiguresKeptWhole(Content(HINT)), id="details-body")

    @property
    def body(self) -> DetailsBody:
        return self.query_one("#details-body", DetailsBody)

    def show_event(
        self,
        data: TimelineData,
        event: int,
        *,
        names: NameIndex | None = None,
        flows: FlowIndex | None = None,
        lead: list[tuple[str, str]] | None = None,
    ) -> None:
        """Describe ``event``; ``lead`` rows (what it is on the critical path) come first."""
        title, rows = describe_event(data, event, names=names, flows=flows)
        self.body.show(details_text(title, [*(lead or []), *rows]))
        self.scroll_home(animate=False)

    def show_rows(self, title: str, rows: list[tuple[str, str]]) -> None:
        """Describe something that is not one event (an idle gap, a range)."""
        self.body.show(details_text(title, rows))
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
            trace = shown_trace(self)
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
        self.body.show(text)
