"""The timeline pane: one Line-API widget (``render_line`` → ``Strip``) drawing a time ruler and the lanes of a
trace, however many events it holds.

The view is a time window ``[t0, t1)``, a time cursor (the zoom pivot, where Enter picks an event), a current
line and the first line shown. Each visible line is binned with numpy (see ``timeline_math``) so a frame costs
O(visible lines × width); plot strips are cached by (line, window, width, generation) and only the lines that
carry a highlight are drawn fresh. Segments carry ``Style.from_meta({"row": …})`` so a click maps back to the
line; the column comes from the click's x.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from gputop_trace.model.kinds import Kind
from gputop_trace.tui.view.lanes import DisplayRow, RowKind
from gputop_trace.tui.view.navigation import FlowIndex, step_in_row
from gputop_trace.tui.view.palette import Overlay, Palette, Role, Sid, style_key
from gputop_trace.tui.view.row_render import Cells, event_row_cells, rule_cells, to_segments, util_row_cells
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.view.timeline_math import (
    Window,
    bin_row,
    clamp_window,
    column_bounds,
    fit_interval,
    fit_label,
    label_width,
    pan_window,
    ruler_line,
    window_around,
    zoom_window,
)
from gputop_trace.units import format_ns

ZOOM_STEP = 0.5  # w / + halve the window, s / - double it
PAN_STEP = 0.25  # a / d move by a quarter of the window
CACHE_LINES = 512
CURSOR_LINE = "┆"


@dataclass(frozen=True)
class Interval:
    """A selected time interval on one GPU (an idle gap, a range's extent)."""

    start: int
    end: int
    rank: int = -1
    device: int = -1
    label: str = ""
    details: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CellInfo:
    """What the cursor's cell holds on the current line: events touching it, busy fraction, dominant event."""

    count: int
    fraction: float
    event: int
    t0: int
    t1: int


class Timeline(Widget, can_focus=True):
    """The timeline pane. Navigation methods are called by the screen's key bindings."""

    DEFAULT_CSS = """
    Timeline {
        height: 1fr;
        min-height: 4;
    }
    """

    class Changed(Message):
        """The view, the cursor or the selection changed (``selection`` True when the selection did)."""

        def __init__(self, selection: bool) -> None:
            super().__init__()
            self.selection = selection

    def __init__(
        self,
        data: TimelineData,
        *,
        flows: FlowIndex | None = None,
        mono: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.data = data
        self.flows = flows
        self.palette = Palette(mono=mono)
        self.collapsed: set[str] = data.layout.default_collapsed()
        self.lines: list[DisplayRow] = []
        self._line_of: dict[tuple[int, int], int] = {}
        self.lo, self.hi = data.extent
        self.t0, self.t1 = self.lo, self.hi
        self.cursor_t = (self.lo + self.hi) // 2
        self.current = 0
        self.top = 0
        self.selected = -1
        self.interval: Interval | None = None
        self.partners = np.zeros(0, dtype=np.int64)
        self.generation = 0
        self._cache: OrderedDict[tuple[object, ...], list[Segment]] = OrderedDict()
        self._styles: dict[tuple[int, int], Style] = {}
        self._base_style = Style()
        self._width, self._height = 80, 24
        self._frame_key: tuple[object, ...] = ()
        self._bounds = np.zeros(0, dtype=np.int64)
        self._rebuild_lines()
        self._first_content_line()

    # ---- geometry ------------------------------------------------------------------------------------------
    @property
    def label_width(self) -> int:
        """Width of the lane-label column."""
        return label_width(self._width)

    @property
    def plot_width(self) -> int:
        """Columns of the plot area."""
        return max(1, self._width - self.label_width)

    @property
    def visible_lines(self) -> int:
        """Lines of lanes shown below the ruler."""
        return max(1, self._height - 1)

    @property
    def window(self) -> Window:
        """The time window on the plot columns."""
        return self._frame()

    # ---- lines ---------------------------------------------------------------------------------------------
    def _rebuild_lines(self) -> None:
        keep = self.lines[self.current] if self.lines and self.current < len(self.lines) else None
        self.lines = self.data.layout.rows(self.collapsed)
        self._line_of = {}
        for idx, ln in enumerate(self.lines):
            if ln.kind == RowKind.EVENTS:
                self._line_of[(ln.lane, ln.depth)] = idx
            elif ln.kind == RowKind.UTIL:
                self._line_of[(-1 - ln.rank, ln.device)] = idx
        if keep is not None:
            for idx, ln in enumerate(self.lines):
                if ln.key == keep.key and ln.depth == keep.depth and ln.kind == keep.kind:
                    self.current = idx
                    break
            else:
                self.current = min(self.current, len(self.lines) - 1)
        self.current = max(0, min(self.current, len(self.lines) - 1))

    def _first_content_line(self) -> None:
        for idx, ln in enumerate(self.lines):
            if ln.kind in (RowKind.UTIL, RowKind.EVENTS):
                self.current = idx
                return

    def line_of_event(self, event: int) -> int:
        """The line index showing ``event``, expanding groups and lanes that hide it."""
        t = self.data.trace
        lane, depth = int(t.lane[event]), int(t.depth[event])
        hide = [k for k in self.data.layout.keys_hiding(lane, depth) if k in self.collapsed]
        if hide:
            self.collapsed.difference_update(hide)
            self._rebuild_lines()
        return self._line_of.get((lane, depth), self.current)

    def line_of_util(self, rank: int, device: int) -> int:
        """The line of a GPU's utilization strip, expanding the groups that hide it (-1 if it has none)."""
        hide = [k for k in self.data.layout.util_keys_hiding(rank, device) if k in self.collapsed]
        if hide:
            self.collapsed.difference_update(hide)
            self._rebuild_lines()
        return self._line_of.get((-1 - rank, device), -1)

    @property
    def current_line(self) -> DisplayRow | None:
        """The line the lane cursor is on."""
        return self.lines[self.current] if 0 <= self.current < len(self.lines) else None

    # ---- state changes -------------------------------------------------------------------------------------
    def _changed(self, *, selection: bool = False) -> None:
        self.refresh()
        self.post_message(self.Changed(selection))

    def set_window(self, t0: int, t1: int) -> None:
        """Show ``[t0, t1)`` (clamped to the trace); the cursor stays at the same screen column."""
        w = self.window
        col = min(max(w.col_of(self.cursor_t), 0), w.width - 1)
        frac = (col + 0.5) / w.width
        self.t0, self.t1 = t0, t1
        self.cursor_t = self.t0 + int((self.t1 - self.t0) * frac)
        self._changed()

    def zoom(self, factor: float) -> None:
        """Zoom around the cursor (``factor`` < 1 zooms in)."""
        t0, t1 = zoom_window(self.t0, self.t1, self.cursor_t, factor, lo=self.lo, hi=self.hi, width=self.plot_width)
        w_old = self.window
        col = w_old.col_of(self.cursor_t)
        self.t0, self.t1 = t0, t1
        # keep the cursor time; if clamping moved the window, keep it inside
        if not self.t0 <= self.cursor_t < self.t1:
            self.cursor_t = self.window.time_of(min(max(col, 0), self.plot_width - 1))
        self._changed()

    def goto_time(self, t: int) -> None:
        """Centre the window on ``t`` (keeping its width) and put the cursor there."""
        span = self.t1 - self.t0
        self.t0, self.t1 = clamp_window(t - span // 2, t - span // 2 + span, self.lo, self.hi, self.plot_width)
        self.cursor_t = min(max(t, self.t0), self.t1 - 1)
        self._changed()

    def pan(self, fraction: float) -> None:
        """Move the window by ``fraction`` of its width; the cursor moves with it."""
        t0, t1 = pan_window(self.t0, self.t1, fraction, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t += t0 - self.t0
        self.t0, self.t1 = t0, t1
        self.cursor_t = min(max(self.cursor_t, self.t0), self.t1 - 1)
        self._changed()

    def fit_all(self) -> None:
        """Show the whole trace."""
        self.t0, self.t1 = self.lo, self.hi
        self.cursor_t = min(max(self.cursor_t, self.t0), self.t1 - 1)
        self._changed()

    def move_cursor(self, columns: int) -> None:
        """Move the time cursor by whole columns, panning when it would leave the window."""
        w = self.window
        col = w.col_of(self.cursor_t) + columns
        if col < 0 or col >= w.width:
            self.pan(columns / w.width)
            w = self.window
            col = min(max(col, 0), w.width - 1)
        self.cursor_t = w.time_of(col) + max(0, (w.time_of(col + 1) - w.time_of(col)) // 2)
        self._changed()

    def move_line(self, delta: int) -> None:
        """Move the lane cursor up or down."""
        if not self.lines:
            return
        self.current = max(0, min(len(self.lines) - 1, self.current + delta))
        self._scroll_to_current()
        self._changed()

    def _scroll_to_current(self) -> None:
        vis = self.visible_lines
        if self.current < self.top:
            self.top = self.current
        elif self.current >= self.top + vis:
            self.top = self.current - vis + 1
        self.top = max(0, min(self.top, max(0, len(self.lines) - vis)))

    def toggle_fold(self, key: str | None = None) -> str | None:
        """Collapse or expand the group or multi-row lane under the lane cursor (or ``key``); returns the key."""
        if key is None:
            line = self.current_line
            if line is None or line.kind in (RowKind.UTIL, RowKind.NOTE):
                return None
            if line.kind == RowKind.EVENTS and line.rows_in_lane <= 1:
                return None
            key = line.key
        if key in self.collapsed:
            self.collapsed.discard(key)
        else:
            self.collapsed.add(key)
        self._rebuild_lines()
        self._scroll_to_current()
        self._changed()
        return key

    def set_collapsed(self, keys: set[str]) -> None:
        """Replace the set of collapsed groups and lanes."""
        self.collapsed = set(keys)
        self._rebuild_lines()
        self._scroll_to_current()
        self._changed()

    def reveal_rank(self, rank: int) -> bool:
        """Expand a rank's groups and bring its first line to the top, with the lane cursor on it. False when the
        trace shows no lanes of that rank."""
        self.collapsed.difference_update(self.data.layout.rank_keys(rank))
        self._rebuild_lines()
        idx = next(
            (i for i, ln in enumerate(self.lines) if ln.kind != RowKind.NOTE and ln.rank == rank),
            -1,
        )
        if idx < 0:
            self._changed()
            return False
        self.current = idx
        self.top = max(0, min(idx, max(0, len(self.lines) - self.visible_lines)))
        self._changed()
        return True

    def show_rank_interval(self, rank: int, start: int, end: int, cursor: int) -> bool:
        """Show ``[start, end)`` with a little context on a rank's lanes (expanded), the cursor at ``cursor``."""
        self.t0, self.t1 = fit_interval(start, end, margin=0.02, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = min(max(cursor, self.t0), self.t1 - 1)
        return self.reveal_rank(rank)

    # ---- selection -----------------------------------------------------------------------------------------
    def select(self, event: int, *, reveal: bool = True, rezoom: bool = False) -> None:
        """Select ``event`` (``-1`` clears): highlight it and its launch partner; bring it into view.

        ``rezoom`` also adjusts the zoom so that the event is neither invisible nor cut (jumps from panels)."""
        self.selected = int(event)
        self.interval = None
        if event >= 0 and self.flows is not None:
            self.partners = self.flows.partners(int(event))
        else:
            self.partners = np.zeros(0, dtype=np.int64)
        if event >= 0 and reveal:
            t = self.data.trace
            s = int(t.start_ns[event])
            e = s + max(int(t.dur_ns[event]), 1)
            self.current = self.line_of_event(int(event))
            self._scroll_to_current()
            self._bring_into_view(s, e, rezoom=rezoom)
        self._changed(selection=True)

    def select_interval(self, interval: Interval) -> None:
        """Select a time interval (an idle gap): show it with context on its GPU's utilization strip."""
        self.selected = -1
        self.partners = np.zeros(0, dtype=np.int64)
        self.interval = interval
        if interval.device >= 0:
            line = self.line_of_util(interval.rank, interval.device)
            if line >= 0:
                self.current = line
                self._scroll_to_current()
        self.t0, self.t1 = fit_interval(
            interval.start, interval.end, margin=0.5, lo=self.lo, hi=self.hi, width=self.plot_width
        )
        self.cursor_t = (interval.start + interval.end) // 2
        self._changed(selection=True)

    def _bring_into_view(self, s: int, e: int, *, rezoom: bool) -> None:
        span = self.t1 - self.t0
        dur = e - s
        if rezoom:
            target = min(max(span, int(dur * 1.25) + 1), max(dur * 16, self.plot_width))
            if target != span or not (self.t0 <= s and e <= self.t1):
                self.t0, self.t1 = window_around(s, e, target, lo=self.lo, hi=self.hi, width=self.plot_width)
        elif not (self.t0 <= s < self.t1):
            if dur > span:
                self.t0, self.t1 = fit_interval(s, e, margin=0.1, lo=self.lo, hi=self.hi, width=self.plot_width)
            else:
                self.t0, self.t1 = window_around(s, e, span, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = min(max((s + e) // 2, self.t0), self.t1 - 1)

    def zoom_to_selection(self) -> bool:
        """Fit the window to the selected event or interval (with a little context). False if none."""
        if self.selected >= 0:
            t = self.data.trace
            s = int(t.start_ns[self.selected])
            e = s + max(int(t.dur_ns[self.selected]), 1)
        elif self.interval is not None:
            s, e = self.interval.start, self.interval.end
        else:
            return False
        self.t0, self.t1 = fit_interval(s, e, margin=0.1, lo=self.lo, hi=self.hi, width=self.plot_width)
        self.cursor_t = (s + e) // 2
        self._changed()
        return True

    def cell_at_cursor(self) -> CellInfo | None:
        """What the cursor's cell holds on the current line (None on a group line)."""
        line = self.current_line
        if line is None or line.kind in (RowKind.GROUP, RowKind.NOTE):
            return None
        w = self.window
        col = w.col_of(self.cursor_t)
        if not 0 <= col < w.width:
            return None
        b = column_bounds(w)[col : col + 2]
        if line.kind == RowKind.UTIL:
            row = self.data.util_row(line.rank, line.device)
        else:
            row = self.data.row(line.lane, line.depth)
        bins = bin_row(row, b)
        dom = int(bins.dominant[0])
        ev = int(row.events[dom]) if dom >= 0 else -1
        return CellInfo(int(bins.count[0]), float(bins.fraction[0]), ev, int(b[0]), int(b[1]))

    def select_under_cursor(self) -> bool:
        """Select the dominant event of the cursor's cell on the current line. False if there is none."""
        info = self.cell_at_cursor()
        if info is None or info.event < 0:
            return False
        self.select(info.event, reveal=False)
        return True

    def step_event(self, direction: int) -> bool:
        """Select the previous/next event on the current line. False at either end (or on a header)."""
        line = self.current_line
        if line is None or line.kind != RowKind.EVENTS:
            return False
        row = self.data.row(line.lane, line.depth)
        t = self.data.trace
        cur = self.selected
        if cur >= 0 and (int(t.lane[cur]), int(t.depth[cur])) == (line.lane, line.depth):
            nxt = step_in_row(row, cur, int(t.start_ns[cur]), direction)
        else:
            nxt = step_in_row(row, -1, self.cursor_t, direction)
        if nxt < 0:
            return False
        self.select(nxt)
        return True

    # ---- rendering -----------------------------------------------------------------------------------------
    def invalidate(self) -> None:
        """Forget cached strips (after new data such as gap marks arrived)."""
        self.generation += 1
        self._cache.clear()
        self._styles.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._width, self._height = max(1, event.size.width), max(1, event.size.height)
        self._cache.clear()
        self._scroll_to_current()
        self.refresh()

    def on_mount(self) -> None:
        self._width, self._height = max(1, self.size.width or 80), max(1, self.size.height or 24)

    def _frame(self) -> Window:
        """Per-frame state (window, column bounds, base style), recomputed only when the view changed."""
        key = (self.t0, self.t1, self._width, self.generation)
        if key != self._frame_key:
            base = self.rich_style
            if base != self._base_style:
                self._base_style = base
                self._styles.clear()
                self._cache.clear()
            self._frame_key = key
            self._window = Window(self.t0, self.t1, self.plot_width)
            self._bounds = column_bounds(self._window)
        return self._window

    def _style(self, key: int, row: int) -> Style:
        """Widget base style + the palette's style for ``key`` + click metadata for line ``row`` (cached)."""
        k = (key, row)
        st = self._styles.get(k)
        if st is None:
            st = self._styles[k] = self._base_style + self.palette.style(key) + Style.from_meta({"row": row})
            if len(self._styles) > 20000:
                self._styles.clear()
        return st

    def render_line(self, y: int) -> Strip:
        size = self.size
        if size.width and (size.width, size.height) != (self._width, self._height):
            self._width, self._height = size.width, size.height
            self._cache.clear()
        self._frame()
        width = self._width
        if y == 0:
            return Strip(self._ruler_segments(), width).adjust_cell_length(width, self._base_style)
        idx = self.top + y - 1
        if idx >= len(self.lines):
            return Strip.blank(width, self._base_style)
        return Strip(self._line_segments(idx), width).adjust_cell_length(width, self._base_style)

    def _ruler_segments(self) -> list[Segment]:
        w = self.window
        g = self.label_width
        head = fit_label(f"⟷ {format_ns(w.span)}", g - 1).ljust(g)
        ruler = ruler_line(w, self.cursor_t)
        base = self._base_style
        tick_style = base + self.palette.style(style_key(int(Sid.RULE), int(Role.LABEL)))
        segs = [Segment(head, base + Style(bold=True))]
        text = ruler.text
        if ruler.flag_start >= 0:
            segs.append(Segment(text[: ruler.flag_start], tick_style))
            segs.append(Segment(text[ruler.flag_start : ruler.flag_end], base + Style(reverse=True, bold=True)))
            segs.append(Segment(text[ruler.flag_end :], tick_style))
        else:
            segs.append(Segment(text, tick_style))
        return segs

    def _gutter_segments(self, idx: int, line: DisplayRow) -> list[Segment]:
        g = self.label_width
        indent = " " * min(line.level, 3)
        if line.kind == RowKind.GROUP:
            text = f"{indent}{'▸' if line.folded else '▾'} {line.label}"
            style = Style(bold=True)
        elif line.kind == RowKind.UTIL:
            busy = self.data.util_row(line.rank, line.device).busy_between(self.t0, self.t1)
            pct = 100.0 * busy / max(self.t1 - self.t0, 1)
            text = f"{indent}{line.label} {pct:.0f}%"
            style = Style()
        else:
            if line.depth == 0:
                fold = ("▸" if line.folded else "▾") if line.rows_in_lane > 1 else " "
                extra = f" +{line.rows_in_lane - 1}" if line.folded else ""
                label = fit_label(line.label, g - len(indent) - 2 - len(extra), min_chars=1) + extra
                text = f"{indent}{fold}{label}"
            else:
                text = f"{indent} ┊"
            style = Style()
        text = fit_label(text, g - 1, min_chars=1).ljust(g)
        if idx == self.current:
            style = style + Style(reverse=True)
        return [Segment(text, self._base_style + style + Style.from_meta({"row": idx, "gutter": True}))]

    def _plot_cells(self, line: DisplayRow, bounds: np.ndarray) -> Cells:  # type: ignore[type-arg]
        if line.kind == RowKind.GROUP:
            return rule_cells(len(bounds) - 1, " " if not line.folded else "┈")
        if line.kind == RowKind.UTIL:
            return util_row_cells(
                self.data.util_row(line.rank, line.device), self.data.gaps.get((line.rank, line.device)), bounds
            )
        return event_row_cells(self.data, self.data.row(line.lane, line.depth), bounds, box_fill=self.palette.box_fill)

    def _overlays(self, idx: int, line: DisplayRow, cells: Cells) -> bool:
        """Apply highlights to a line's cells; True when any was applied."""
        applied = False
        w = self.window
        t = self.data.trace
        if line.kind == RowKind.EVENTS:
            targets = [(self.selected, Overlay.SELECTED)] if self.selected >= 0 else []
            targets += [(int(p), Overlay.PARTNER) for p in self.partners[:64].tolist()]
            for ev, ov in targets:
                if int(t.lane[ev]) == line.lane and int(t.depth[ev]) == line.depth:
                    s = int(t.start_ns[ev])
                    e = s + max(int(t.dur_ns[ev]), 1)
                    if e > self.t0 and s < self.t1:
                        cells.overlay(w.col_of(s), w.col_of(e - 1), ov)
                        applied = True
        elif line.kind == RowKind.UTIL and self.interval is not None:
            iv = self.interval
            if (iv.rank, iv.device) == (line.rank, line.device) and iv.end > self.t0 and iv.start < self.t1:
                cells.overlay(w.col_of(iv.start), w.col_of(iv.end - 1), Overlay.SELECTED)
                applied = True
        if idx == self.current and line.kind != RowKind.GROUP:
            col = w.col_of(self.cursor_t)
            if 0 <= col < w.width and (int(cells.keys[col]) >> 16) == 0:
                cells.overlay(col, col, Overlay.CURSOR)
                applied = True
        return applied

    def _has_overlay(self, idx: int, line: DisplayRow) -> bool:
        if idx == self.current:
            return True
        if line.kind == RowKind.UTIL:
            return self.interval is not None
        if line.kind != RowKind.EVENTS:
            return False
        t = self.data.trace
        evs = ([self.selected] if self.selected >= 0 else []) + self.partners[:64].tolist()
        return any(int(t.lane[e]) == line.lane and int(t.depth[e]) == line.depth for e in evs)

    def _line_segments(self, idx: int) -> list[Segment]:
        line = self.lines[idx]
        if line.kind == RowKind.NOTE:
            style = self._base_style + Style(color="yellow", italic=True)
            return [Segment(fit_label(" " + line.label, self._width, min_chars=1), style)]
        gutter = self._gutter_segments(idx, line)
        w = self._frame()
        cursor_col = w.col_of(self.cursor_t)
        key = (idx, line.kind, line.key, line.depth, line.folded, w.t0, w.t1, w.width, cursor_col, self.generation)
        if not self._has_overlay(idx, line):
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return gutter + cached
        cells = self._plot_cells(line, self._bounds)
        if line.kind != RowKind.GROUP and 0 <= cursor_col < w.width and (int(cells.keys[cursor_col]) >> 8) == 0:
            cells.chars[cursor_col] = CURSOR_LINE
            cells.keys[cursor_col] = style_key(int(Sid.RULE), int(Role.LABEL))
        overlaid = self._overlays(idx, line, cells)
        segs = to_segments(cells, lambda k: self._style(k, idx))
        if not overlaid:
            self._cache[key] = segs
            if len(self._cache) > CACHE_LINES:
                self._cache.popitem(last=False)
        return gutter + segs

    def plot_text(self, idx: int) -> str:
        """The characters of a line's plot area as drawn now (for tests and the benchmark)."""
        line = self.lines[idx]
        self._frame()
        return self._plot_cells(line, self._bounds).text

    # ---- mouse ---------------------------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        meta = event.style.meta
        row = meta.get("row")
        if not isinstance(row, int) or not 0 <= row < len(self.lines):
            return
        self.current = row
        if meta.get("gutter"):
            line = self.lines[row]
            if line.kind == RowKind.GROUP or (line.kind == RowKind.EVENTS and line.rows_in_lane > 1):
                self.toggle_fold(line.key)
                return
            self._changed()
            return
        col = event.x - self.label_width
        w = self.window
        if 0 <= col < w.width:
            self.cursor_t = (w.time_of(col) + w.time_of(col + 1)) // 2
        if not self.select_under_cursor():
            self._changed()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self.top = max(0, min(self.top + 3, max(0, len(self.lines) - self.visible_lines)))
        self.refresh()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.top = max(0, self.top - 3)
        self.refresh()

    # ---- helpers for callers -------------------------------------------------------------------------------
    def kind_of_selected(self) -> Kind | None:
        """The kind of the selected event, if any."""
        return Kind(int(self.data.trace.kind[self.selected])) if self.selected >= 0 else None
