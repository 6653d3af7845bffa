"""What the two Line-API plot widgets (the timeline, the rank comparison) share: a ruler line on top, then one
screen line per plot line, each a label column on the left and plot columns on the right over a time window
``[t0, t1)`` in ns; the lane cursor and the first line shown; and an LRU cache of plot strips, keyed by what the
widget draws them from (the line, the window, the width, the generation...).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.widget import Widget

from gputop_trace.tui.theme import watch_palette
from gputop_trace.tui.view.palette import Palette
from gputop_trace.tui.view.timeline_math import Window, fit_label, label_width
from gputop_trace.units import format_ns

LineT = TypeVar("LineT")
StripKey = tuple[object, ...]


class PlotWidget(Widget, Generic[LineT], can_focus=True):
    """A Line-API plot over a time window ``[t0, t1)`` (ns), bounded by ``[lo, hi)``; ``lines`` below a ruler."""

    def __init__(
        self,
        *,
        cache_lines: int,
        height: int,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lines: list[LineT] = []
        self.current = 0
        self.top = 0
        self.t0, self.t1 = 0, 1
        self.lo, self.hi = 0, 1
        self.generation = 0
        self._width, self._height = 80, height
        self._default_height = height
        self._strips: LRUCache[StripKey, list[Segment]] = LRUCache(cache_lines)
        self.palette = Palette()  # until mounted: then the app's theme's (set_palette)

    # ---- geometry ------------------------------------------------------------------------------------------
    @property
    def label_width(self) -> int:
        """Width of the label column."""
        return label_width(self._width)

    @property
    def plot_width(self) -> int:
        """Columns of the plot area."""
        return max(1, self._width - self.label_width)

    @property
    def visible_lines(self) -> int:
        """Lines shown below the ruler."""
        return max(1, self._height - 1)

    @property
    def window(self) -> Window:
        """The time window on the plot columns."""
        return Window(self.t0, self.t1, self.plot_width)

    def on_mount(self) -> None:
        self._width = max(1, self.size.width or 80)
        self._height = max(1, self.size.height or self._default_height)
        watch_palette(self, self.set_palette)

    def set_palette(self, palette: Palette) -> None:
        """Draw with ``palette`` (the app's theme's): forget what was drawn with another."""
        changed = not palette.same_as(self.palette)
        self.palette = palette
        if changed:
            self.invalidate()

    def _sync_size(self) -> None:
        """Take the widget's size if it changed since the last resize event (forgetting the cached strips)."""
        size = self.size
        if size.width and (size.width, size.height) != (self._width, self._height):
            self._width, self._height = size.width, size.height
            self._strips.clear()

    # ---- lines ---------------------------------------------------------------------------------------------
    def _scroll_to_current(self) -> None:
        """Scroll so that the line cursor is shown."""
        vis = self.visible_lines
        if self.current < self.top:
            self.top = self.current
        elif self.current >= self.top + vis:
            self.top = self.current - vis + 1
        self.top = max(0, min(self.top, max(0, len(self.lines) - vis)))

    # ---- rendering -----------------------------------------------------------------------------------------
    def invalidate(self) -> None:
        """Forget cached strips (after new data such as gap marks arrived)."""
        self.generation += 1
        self._strips.clear()
        self.refresh()

    def _ruler_head(self, base: Style) -> Segment:
        """The label column of the ruler line: the window's length."""
        g = self.label_width
        return Segment(fit_label(f"⟷ {format_ns(self.window.span)}", g - 1).ljust(g), base + Style(bold=True))
