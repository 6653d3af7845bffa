"""The Diff view's stacking: one Line-API widget drawing the same step of BASE and TEST on one time axis (see
``tui.view.diff_stack``), each run's lines on the same columns with its own step start as time 0. Lines are binned
with the timeline's numpy row renderer, so a frame costs O(visible lines × width); strips are cached per view."""

from __future__ import annotations

from collections import OrderedDict

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.strip import Strip
from textual.widget import Widget

from gputop_trace.tui.theme import watch_palette
from gputop_trace.tui.view.diff_stack import StackedStep, StackLine
from gputop_trace.tui.view.palette import Palette, Role, Sid, style_key
from gputop_trace.tui.view.rank_compare import LineKind, busy_pct, line_bounds
from gputop_trace.tui.view.row_render import Cells, event_row_cells, to_segments, util_row_cells
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.view.timeline_math import (
    Window,
    clamp_window,
    fit_label,
    label_width,
    pan_window,
    ruler_line,
    zoom_window,
)
from gputop_trace.units import format_ns

CACHE_LINES = 128


class DiffStack(Widget, can_focus=True):
    """The same step of both runs, stacked. The Diff screen's keys call :meth:`show`, :meth:`zoom`, :meth:`pan`."""

    DEFAULT_CSS = """
    DiffStack { height: 1fr; min-height: 4; }
    """

    def __init__(self, data: tuple[TimelineData, TimelineData], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = data
        self.palette = Palette()  # until mounted: then the app's theme's (set_palette)
        self.step: StackedStep | None = None
        self.t0, self.t1 = 0, 1
        self.lo, self.hi = 0, 1
        self.top = 0
        self.message = "no matched steps to stack"
        self._width, self._height = 80, 10
        self._cache: OrderedDict[tuple[object, ...], list[Segment]] = OrderedDict()

    def on_mount(self) -> None:
        watch_palette(self, self.set_palette)

    def set_palette(self, palette: Palette) -> None:
        """Draw with ``palette`` (the app's theme's): forget what was drawn with another."""
        changed = not palette.same_as(self.palette)
        self.palette = palette
        if changed:
            self._changed()

    @property
    def label_width(self) -> int:
        """Width of the line-label column (as the timeline's)."""
        return label_width(self._width)

    @property
    def window(self) -> Window:
        """The relative time window on the plot columns."""
        return Window(self.t0, self.t1, max(1, self._width - self.label_width))

    def show(self, step: StackedStep) -> None:
        """Stack this step, fitted."""
        self.step = step
        self.lo = min(-off for off in step.offsets)
        self.hi = max(d.trace.span_ns - off for d, off in zip(self.data, step.offsets, strict=True))
        self.hi = max(self.hi, self.lo + 1)
        self.fit()

    def fit(self) -> None:
        """Show the whole step of both runs."""
        if self.step is not None:
            t0, t1 = self.step.window()
            self.t0, self.t1 = clamp_window(t0, t1, self.lo, self.hi, self.window.width)
            self._changed()

    def zoom(self, factor: float) -> None:
        """Zoom around the middle (``factor`` < 1 zooms in)."""
        mid = (self.t0 + self.t1) // 2
        w = self.window.width
        self.t0, self.t1 = zoom_window(self.t0, self.t1, mid, factor, lo=self.lo, hi=self.hi, width=w)
        self._changed()

    def pan(self, fraction: float) -> None:
        """Move the window by ``fraction`` of its width."""
        w = self.window.width
        self.t0, self.t1 = pan_window(self.t0, self.t1, fraction, lo=self.lo, hi=self.hi, width=w)
        self._changed()

    def scroll_lines(self, delta: int) -> None:
        """Scroll the lines below the ruler."""
        n = len(self.step.lines) if self.step is not None else 0
        self.top = max(0, min(self.top + delta, max(0, n - (self._height - 1))))
        self.refresh()

    def _changed(self) -> None:
        self._cache.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._width, self._height = max(1, event.size.width), max(1, event.size.height)
        self.t0, self.t1 = clamp_window(self.t0, self.t1, self.lo, self.hi, self.window.width)
        self._changed()

    def render_line(self, y: int) -> Strip:
        size = self.size
        if size.width and (size.width, size.height) != (self._width, self._height):
            self._width, self._height = size.width, size.height
            self._cache.clear()
        width = self._width
        base = self.rich_style
        if self.step is None:
            text = self.message if y == 0 else ""
            return Strip([Segment(fit_label(" " + text, width, min_chars=1), base + Style(italic=True))], width)
        if y == 0:
            return Strip(self._ruler(), width).adjust_cell_length(width, base)
        idx = self.top + y - 1
        if idx >= len(self.step.lines):
            return Strip.blank(width, base)
        return Strip(self._line(self.step.lines[idx], idx), width).adjust_cell_length(width, base)

    def _ruler(self) -> list[Segment]:
        w = self.window
        g = self.label_width
        base = self.rich_style
        head = fit_label(f"⟷ {format_ns(w.span)}", g - 1).ljust(g)
        tick = base + self.palette.style(style_key(int(Sid.RULE), int(Role.LABEL)))
        return [Segment(head, base + Style(bold=True)), Segment(ruler_line(w, self.t1 + 1).text, tick)]

    def _line(self, line: StackLine, idx: int) -> list[Segment]:
        base = self.rich_style
        if line.kind == LineKind.HEADER:
            style = Style(bold=True) + self.palette.colour("gputop-test-run" if line.side else "gputop-base-run")
            return [Segment(fit_label(" " + line.label, self._width, min_chars=1), base + style)]
        assert self.step is not None
        offset = self.step.offsets[line.side]
        w = self.window
        key = (idx, w.t0, w.t1, w.width, self.step.index)
        segs = self._cache.get(key)
        if segs is None:
            segs = to_segments(self._cells(line, w, offset), lambda k: base + self.palette.style(k))
            self._cache[key] = segs
            if len(self._cache) > CACHE_LINES:
                self._cache.popitem(last=False)
        label = line.label
        data = self.data[line.side]
        if line.kind == LineKind.UTIL:
            busy = data.util_row(line.rank, line.device).busy_between(w.t0 + offset, w.t1 + offset)
            label = f"{label} {busy_pct(busy, w)}"
        gutter = fit_label(" " + label, self.label_width - 1, min_chars=1).ljust(self.label_width)
        return [Segment(gutter, base), *segs]

    def _cells(self, line: StackLine, w: Window, offset: int) -> Cells:
        data = self.data[line.side]
        bounds = line_bounds(w, offset)
        if line.kind == LineKind.UTIL:
            return util_row_cells(
                data.util_row(line.rank, line.device), data.gaps.get((line.rank, line.device)), bounds
            )
        return event_row_cells(data, data.row(line.lane, line.depth), bounds, box_fill=self.palette.box_fill)

    def plot_text(self, idx: int) -> str:
        """The characters of line ``idx``'s plot area as drawn now (for tests)."""
        assert self.step is not None
        return "".join(s.text for s in self._line(self.step.lines[idx], idx))[self.label_width :]
