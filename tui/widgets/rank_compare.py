"""The rank comparison pane: one Line-API widget (``render_line`` → ``Strip``) drawing the same step on every rank,
stacked and aligned (see ``rank_compare`` for the arithmetic).

Each rank has a header line (its step's length, how late it reached the step's most uneven collective, or how
long it waited inside the step's collectives) and then its GPU busy strip, the stream carrying its collectives and
the top rows of its main CPU thread, all on the same columns with the rank's own time 0 subtracted. A dotted
``┆`` on every rank marks the moment the first rank reached that collective. Lines are binned with numpy like the
timeline's, so a frame costs O(visible lines × width); plot strips are cached per view.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.strip import Strip

from gputop_trace.model.arrays import I64
from gputop_trace.tui.view.palette import Overlay, Palette, Role, Sid, style_key
from gputop_trace.tui.view.rank_compare import (
    Align,
    CompareLine,
    LineKind,
    StepComparison,
    StepSlot,
    busy_pct,
    compare_lines,
    compare_step,
    header_text,
    line_bounds,
    marker_col,
    rank_offsets,
    slot_at,
    slot_window,
    thread_rows_for,
    view_extent,
    window_slot,
)
from gputop_trace.tui.view.ranks_view import RanksView
from gputop_trace.tui.view.row_render import Cells, event_row_cells, to_segments, util_row_cells
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.view.timeline_math import (
    clamp_window,
    fit_label,
    pan_window,
    ruler_line,
    zoom_window,
)
from gputop_trace.tui.widgets.plot_base import PlotWidget

CACHE_LINES = 256
MARKER = "┆"


class RankCompare(PlotWidget[CompareLine], can_focus=True):
    """Same step, every rank. Navigation methods are called by the compare screen's key bindings."""

    DEFAULT_CSS = """
    RankCompare { height: 1fr; min-height: 4; }
    """

    class Changed(Message):
        """The step, the alignment or the window changed."""

    def __init__(self, data: TimelineData, *, id: str | None = None) -> None:
        super().__init__(cache_lines=CACHE_LINES, height=20, id=id)
        self.data = data
        self.view: RanksView | None = None
        self.align = Align.STEP
        self.slot_index = -1
        self.slot: StepSlot | None = None
        self.comparison: StepComparison | None = None
        self.offsets: dict[int, int] = {}
        self.thread_rows = 0
        self.message = "comparing ranks… (the rank analysis is still running)"
        self._styles: dict[int, Style] = {}

    # ---- geometry (the window is relative: each rank's own time 0 is subtracted) ----------------------------
    @property
    def steps(self) -> int:
        """How many steps there are to step through (0: the trace has none, the view compares a time window)."""
        return len(self.view.slots) if self.view is not None else 0

    # ---- state ---------------------------------------------------------------------------------------------
    def set_view(self, view: RanksView, rank: int, t: int, window: tuple[int, int]) -> None:
        """Show the step that holds time ``t`` on ``rank`` (or the time ``window`` when there are no steps)."""
        self.view = view
        if view.slots:
            self.slot_index = slot_at(view.slots, rank, t)
            self._show_slot(view.slots[self.slot_index], keep_window=False)
        else:
            self.slot_index = -1
            self._show_slot(window_slot(sorted(view.lanes), *window), keep_window=False)
        ranks = [ln.rank for ln in self.lines]
        if rank in ranks:
            self.current = ranks.index(rank)
            self._scroll_to_current()

    def _show_slot(self, slot: StepSlot, *, keep_window: bool) -> None:
        assert self.view is not None
        self.slot = slot
        self.offsets = rank_offsets(slot, self.align)
        self.comparison = compare_step(self.data, self.view.report, self.view.collectives, slot)
        self._build_lines()
        self.lo, self.hi = view_extent(self.data.trace.span_ns, self.offsets)
        if not keep_window:
            t0, t1 = slot_window(slot, self.offsets)
            self.t0, self.t1 = clamp_window(t0, t1, self.lo, self.hi, self.plot_width)
        self.current = min(self.current, max(0, len(self.lines) - 1))
        self._scroll_to_current()
        self._changed()

    def _build_lines(self) -> None:
        if self.view is None or self.slot is None:
            return
        self.thread_rows = thread_rows_for(self.view.lanes, self.visible_lines)
        self.lines = compare_lines(self.data.trace, self.view.lanes, self.slot, self.thread_rows)

    def _changed(self) -> None:
        self._strips.clear()
        self.refresh()
        self.post_message(self.Changed())

    def step(self, delta: int) -> bool:
        """Show the previous/next step (the previous/next window when there are no steps). False at either end."""
        if self.view is None or self.slot is None:
            return False
        if self.slot.window:
            sp = next(iter(self.slot.spans.values()))
            span = sp[1] - sp[0]
            start = min(max(sp[0] + delta * span, 0), max(0, self.data.trace.span_ns - span))
            if start == sp[0]:
                return False
            self._show_slot(window_slot(sorted(self.view.lanes), start, start + span), keep_window=True)
            return True
        nxt = self.slot_index + delta
        if not 0 <= nxt < len(self.view.slots):
            return False
        self.slot_index = nxt
        self._show_slot(self.view.slots[nxt], keep_window=False)
        return True

    def toggle_align(self) -> Align:
        """Switch between each rank's step start and the common clock as time 0."""
        self.align = Align.CLOCK if self.align == Align.STEP else Align.STEP
        if self.slot is not None:
            self._show_slot(self.slot, keep_window=False)
        return self.align

    def zoom(self, factor: float) -> None:
        """Zoom around the middle of the window (``factor`` < 1 zooms in)."""
        mid = (self.t0 + self.t1) // 2
        self.t0, self.t1 = zoom_window(self.t0, self.t1, mid, factor, lo=self.lo, hi=self.hi, width=self.plot_width)
        self._changed()

    def pan(self, fraction: float) -> None:
        """Move the window by ``fraction`` of its width."""
        self.t0, self.t1 = pan_window(self.t0, self.t1, fraction, lo=self.lo, hi=self.hi, width=self.plot_width)
        self._changed()

    def fit(self) -> None:
        """Show the whole step on every rank."""
        if self.slot is not None:
            t0, t1 = slot_window(self.slot, self.offsets)
            self.t0, self.t1 = clamp_window(t0, t1, self.lo, self.hi, self.plot_width)
            self._changed()

    def move_line(self, delta: int) -> None:
        """Move the line cursor."""
        if self.lines:
            self.current = max(0, min(len(self.lines) - 1, self.current + delta))
            self._scroll_to_current()
            self.refresh()

    def next_rank(self, delta: int) -> bool:
        """Move the line cursor to the next / previous rank's header line. False when there is none."""
        heads = [i for i, ln in enumerate(self.lines) if ln.kind == LineKind.HEADER]
        if delta > 0:
            nxt = next((i for i in heads if i > self.current), -1)
        else:
            nxt = next((i for i in reversed(heads) if i < self.current), -1)
        if nxt < 0:
            return False
        self.current = nxt
        self._scroll_to_current()
        self.refresh()
        return True

    @property
    def current_rank(self) -> int | None:
        """The rank of the line under the cursor."""
        return self.lines[self.current].rank if 0 <= self.current < len(self.lines) else None

    # ---- rendering -----------------------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._width, self._height = max(1, event.size.width), max(1, event.size.height)
        self.t0, self.t1 = clamp_window(self.t0, self.t1, self.lo, self.hi, self.plot_width)
        if self.view is not None and thread_rows_for(self.view.lanes, self.visible_lines) != self.thread_rows:
            self._build_lines()
            self.current = min(self.current, max(0, len(self.lines) - 1))
        self._strips.clear()
        self._scroll_to_current()
        self.refresh()

    def set_palette(self, palette: Palette) -> None:
        """Draw with ``palette`` (the app's theme's), forgetting the styles made with the previous one."""
        if not palette.same_as(self.palette):
            self._styles.clear()
        super().set_palette(palette)

    def _style(self, key: int) -> Style:
        st = self._styles.get(key)
        if st is None:
            st = self._styles[key] = self.rich_style + self.palette.style(key)
        return st

    def render_line(self, y: int) -> Strip:
        self._sync_size()
        width = self._width
        base = self.rich_style
        if self.view is None or not self.lines:
            text = self.message if y == 1 else ""
            return Strip([Segment(fit_label(" " + text, width, min_chars=1), base + Style(italic=True))], width)
        if y == 0:
            return Strip(self._ruler(), width).adjust_cell_length(width, base)
        idx = self.top + y - 1
        if idx >= len(self.lines):
            return Strip.blank(width, base)
        return Strip(self._line(idx), width).adjust_cell_length(width, base)

    def _ruler(self) -> list[Segment]:
        base = self.rich_style
        ruler = ruler_line(self.window, self.t1 + 1)  # no cursor flag: times are from each rank's time 0
        tick = base + self.palette.style(style_key(int(Sid.RULE), int(Role.LABEL)))
        return [self._ruler_head(base), Segment(ruler.text, tick)]

    def _line(self, idx: int) -> list[Segment]:
        line = self.lines[idx]
        base = self.rich_style
        current = idx == self.current
        cmp = self.comparison
        assert cmp is not None and self.slot is not None
        if line.kind in (LineKind.HEADER, LineKind.NOTE):
            if line.kind == LineKind.HEADER:
                sp = self.slot.spans.get(line.rank)
                late = cmp.has_late_rank and line.rank == cmp.late_rank
                text = ("⚑ " if late else "  ") + header_text(cmp, line.rank, sp[1] - sp[0] if sp else None)
                style = Style(bold=True) + (self.palette.colour("gputop-late") if late else Style())
                if late and self.palette.mono:
                    style += Style(underline=True)
            else:
                text = "   " + line.label
                style = Style(italic=True) + self.palette.colour("gputop-late")
            if current:
                style += Style(reverse=True)
            return [Segment(fit_label(text, self._width, min_chars=1), base + style)]
        offset = self.offsets.get(line.rank, 0)
        w = self.window
        key = (idx, w.t0, w.t1, w.width, self.slot.label, self.slot_index, self.align, self.generation)
        segs = self._strips.get(key)
        if segs is None:
            cells = self._cells(line, line_bounds(w, offset))
            fig = cmp.figures.get(line.rank)
            col = marker_col(w, fig.marker_ns, offset) if fig is not None else -1
            if col >= 0:
                if (int(cells.keys[col]) >> 8) & 0xFF == int(Role.BLANK):
                    cells.chars[col] = MARKER
                    cells.keys[col] = style_key(int(Sid.MARKER), int(Role.DENSE))
                else:
                    cells.overlay(col, col, Overlay.CURSOR)
            segs = to_segments(cells, self._style)
            self._strips[key] = segs
        return [*self._gutter(line, current, offset), *segs]

    def _gutter(self, line: CompareLine, current: bool, offset: int) -> list[Segment]:
        g = self.label_width
        label = line.label
        if line.kind == LineKind.UTIL:
            w = self.window
            busy = self.data.util_row(line.rank, line.device).busy_between(w.t0 + offset, w.t1 + offset)
            label = f"{label} {busy_pct(busy, w)}"
        text = fit_label(" " + label, g - 1, min_chars=1).ljust(g)
        style = Style(reverse=True) if current else Style()
        return [Segment(text, self.rich_style + style)]

    def _cells(self, line: CompareLine, bounds: I64) -> Cells:
        if line.kind == LineKind.UTIL:
            gaps = self.data.gaps.get((line.rank, line.device))
            return util_row_cells(self.data.util_row(line.rank, line.device), gaps, bounds)
        return event_row_cells(self.data, self.data.row(line.lane, line.depth), bounds, box_fill=self.palette.box_fill)

    def cells_of(self, idx: int) -> Cells:
        """The plot cells of an event or busy-strip line in the current view, without the marker (for tests)."""
        line = self.lines[idx]
        return self._cells(line, line_bounds(self.window, self.offsets.get(line.rank, 0)))

    def plot_text(self, idx: int) -> str:
        """The characters of a line's plot area as drawn now (for tests)."""
        return "".join(s.text for s in self._line(idx))[self.label_width :]

    # ---- mouse ---------------------------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        idx = self.top + event.y - 1
        if event.y >= 1 and 0 <= idx < len(self.lines):
            self.current = idx
            self.refresh()
