"""The timeline's drawing: its lines (the lanes of a trace, folded by group), the time ruler and ``render_line``
(``Strip``), however many events the trace holds.

Each visible line is binned with numpy (see ``timeline_math``) so a frame costs O(visible lines × width); plot
strips are cached by (line, window, width, generation) and only the lines that carry a highlight (the selection,
its launch partners, the selected interval, the time cursor) are drawn fresh. Segments carry
``Style.from_meta({"row": …})`` so a click maps back to the line; the column comes from the click's x.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.cache import LRUCache
from textual.strip import Strip

from gputop_trace.presentation.name_fitting import fit_names
from gputop_trace.tui.view.lanes import DisplayRow, RowKind
from gputop_trace.tui.view.navigation import FlowIndex
from gputop_trace.tui.view.palette import Overlay, Role, Sid, style_key
from gputop_trace.tui.view.row_render import (
    Cells,
    event_row_cells,
    memory_row_cells,
    rule_cells,
    to_segments,
    util_row_cells,
)
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.view.timeline_math import Window, column_bounds, fit_label, ruler_line
from gputop_trace.tui.widgets.plot_base import PlotWidget
from gputop_trace.units import format_bytes

if TYPE_CHECKING:
    from gputop_trace.tui.view.critical_path_view import PathMarks

CACHE_LINES = 512
CURSOR_LINE = "┆"
STYLE_CACHE = 20000  # (style key, line) pairs
#: the highlights the time cursor is drawn over (not the selection nor a launch partner)
_CURSOR_OVER = (int(Overlay.NONE), int(Overlay.PATH), int(Overlay.PATH_IDLE))


@dataclass(frozen=True)
class Interval:
    """A selected time interval on one GPU (an idle gap, a range's extent)."""

    start: int
    end: int
    rank: int = -1
    device: int = -1
    label: str = ""
    details: tuple[tuple[str, str], ...] = ()


class TimelineCanvas(PlotWidget[DisplayRow]):
    """The timeline's state and drawing; the navigation and the selection are ``Timeline``'s."""

    def __init__(
        self,
        data: TimelineData,
        *,
        flows: FlowIndex | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(cache_lines=CACHE_LINES, height=24, name=name, id=id, classes=classes)
        self.data = data
        self.flows = flows
        self.collapsed: set[str] = data.layout.default_collapsed()
        self._line_of: dict[tuple[int, int], int] = {}
        self.lo, self.hi = data.extent
        self.t0, self.t1 = self.lo, self.hi
        self.cursor_t = (self.lo + self.hi) // 2
        self.selected = -1
        self.interval: Interval | None = None
        self.partners = np.zeros(0, dtype=np.int64)
        self.path_marks: PathMarks | None = None  # the critical path drawn over the lanes (p), None when hidden
        self._styles: LRUCache[tuple[int, int], Style] = LRUCache(STYLE_CACHE)
        self._base_style = Style()
        self._frame_key: tuple[object, ...] = ()
        self._bounds = np.zeros(0, dtype=np.int64)
        self._fitted_for: list[DisplayRow] | None = None  # the lines the fitted lane names below are for
        self._fitted_labels: dict[int, dict[int, str]] = {}  # width -> line -> name
        self._rebuild_lines()
        self._first_content_line()

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

    def line_of_row(self, lane: int, depth: int = 0) -> int:
        """The line of row ``depth`` of ``lane``, expanding the groups and lanes that hide it (-1 if none)."""
        hide = [k for k in self.data.layout.keys_hiding(lane, depth) if k in self.collapsed]
        if hide:
            self.collapsed.difference_update(hide)
            self._rebuild_lines()
        return self._line_of.get((lane, depth), -1)

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

    # ---- rendering -----------------------------------------------------------------------------------------
    def invalidate(self) -> None:
        """Forget cached strips and styles (after new data such as gap marks arrived)."""
        self._styles.clear()
        super().invalidate()

    def on_resize(self, event: events.Resize) -> None:
        self._width, self._height = max(1, event.size.width), max(1, event.size.height)
        self._strips.clear()
        self._scroll_to_current()
        self.refresh()

    def _frame(self) -> Window:
        """Per-frame state (window, column bounds, base style), recomputed only when the view changed."""
        key = (self.t0, self.t1, self._width, self.generation)
        if key != self._frame_key:
            base = self.rich_style
            if base != self._base_style:
                self._base_style = base
                self._styles.clear()
                self._strips.clear()
            self._frame_key = key
            self._window = Window(self.t0, self.t1, self.plot_width)
            self._bounds = column_bounds(self._window)
        return self._window

    def _style(self, key: int, row: int) -> Style:
        """Widget base style + the palette's style for ``key`` + click metadata for line ``row`` (cached)."""
        k = (key, row)
        st = self._styles.get(k)
        if st is None:
            st = self._base_style + self.palette.style(key) + Style.from_meta({"row": row})
            self._styles[k] = st
        return st

    def render_line(self, y: int) -> Strip:
        self._sync_size()
        self._frame()
        width = self._width
        if y == 0:
            return Strip(self._ruler_segments(), width).adjust_cell_length(width, self._base_style)
        idx = self.top + y - 1
        if idx >= len(self.lines):
            return Strip.blank(width, self._base_style)
        return Strip(self._line_segments(idx), width).adjust_cell_length(width, self._base_style)

    def _ruler_segments(self) -> list[Segment]:
        ruler = ruler_line(self.window, self.cursor_t)
        base = self._base_style
        tick_style = base + self.palette.style(style_key(int(Sid.RULE), int(Role.LABEL)))
        segs = [self._ruler_head(base)]
        text = ruler.text
        if ruler.flag_start >= 0:
            segs.append(Segment(text[: ruler.flag_start], tick_style))
            segs.append(Segment(text[ruler.flag_start : ruler.flag_end], base + Style(reverse=True, bold=True)))
            segs.append(Segment(text[ruler.flag_end :], tick_style))
        else:
            segs.append(Segment(text, tick_style))
        return segs

    def _lane_label(self, idx: int, width: int) -> str:
        """Line ``idx``'s lane name in ``width`` columns, cut so that lanes named alike still read differently
        (``Host Threads/554`` and ``/631`` are not both ``Host Threa…``): :func:`fit_names` over every lane line
        given the same width, computed once per set of lines and width."""
        if self._fitted_for is not self.lines:  # held, so the identity test cannot match a new list
            self._fitted_for = self.lines
            self._fitted_labels = {}
        fitted = self._fitted_labels.get(width)
        if fitted is None:
            rows = [i for i, ln in enumerate(self.lines) if ln.kind == RowKind.EVENTS and ln.depth == 0]
            names = fit_names([self.lines[i].label for i in rows], width, keep_head=True) if width >= 4 else []
            fitted = dict(zip(rows, names, strict=False))
            self._fitted_labels[width] = fitted
        return fitted.get(idx) or fit_label(self.lines[idx].label, width, min_chars=1)

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
        elif line.kind == RowKind.MEMORY:
            mem = self.data.memory.get((line.rank, line.device))
            most = mem.max_between(self.t0, self.t1, line.series or "allocated") if mem is not None else 0
            text = f"{indent}{line.label} {format_bytes(most)}"
            style = Style()
        else:
            if line.depth == 0:
                fold = ("▸" if line.folded else "▾") if line.rows_in_lane > 1 else " "
                extra = f" +{line.rows_in_lane - 1}" if line.folded else ""
                label = self._lane_label(idx, g - len(indent) - 2 - len(extra)) + extra
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
        if line.kind == RowKind.MEMORY:
            mem = self.data.memory.get((line.rank, line.device))
            if mem is not None:
                return memory_row_cells(mem, bounds, line.series or "allocated")
            return rule_cells(len(bounds) - 1, " ")
        if line.kind == RowKind.UTIL:
            return util_row_cells(
                self.data.util_row(line.rank, line.device), self.data.gaps.get((line.rank, line.device)), bounds
            )
        return event_row_cells(self.data, self.data.row(line.lane, line.depth), bounds, box_fill=self.palette.box_fill)

    def set_path_marks(self, marks: PathMarks | None) -> None:
        """Draw a step's critical path over the lanes (None hides it)."""
        self.path_marks = marks
        self.invalidate()

    def _path_overlay(self, line: DisplayRow, cells: Cells) -> None:
        """Mark the columns of the critical path's segments on this line (part of the cached strip: the strips
        are dropped whenever the path shown changes)."""
        marks = self.path_marks
        if marks is None:
            return
        if line.kind == RowKind.EVENTS:
            folded = line.folded and line.depth == 0
            starts, ends, idle = marks.row_window(line.lane, line.depth, self.t0, self.t1, folded=folded)
        elif line.kind == RowKind.UTIL:
            starts, ends, idle = marks.strip_window(line.rank, line.device, self.t0, self.t1)
        else:
            return
        if not len(starts):
            return
        w, n = self.window, cells.width
        c0 = np.clip(w.cols_of(starts), 0, n - 1)
        c1 = np.clip(w.cols_of(ends - 1), 0, n - 1)
        # idle first, so that a cell holding both a segment and idle time shows the segment
        for which, overlay in ((idle, Overlay.PATH_IDLE), (~idle, Overlay.PATH)):
            if not which.any():
                continue
            edges = np.zeros(n + 1, dtype=np.int64)
            np.add.at(edges, c0[which], 1)
            np.add.at(edges, c1[which] + 1, -1)
            hit = np.cumsum(edges[:-1]) > 0
            cells.keys[hit] = (cells.keys[hit] & 0xFFFF) | (int(overlay) << 16)

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
            if 0 <= col < w.width and (int(cells.keys[col]) >> 16) in _CURSOR_OVER:
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
            style = self._base_style + Style(color=self.palette.colours["gputop-message"], italic=True)
            return [Segment(fit_label(" " + line.label, self._width, min_chars=1), style)]
        gutter = self._gutter_segments(idx, line)
        w = self._frame()
        cursor_col = w.col_of(self.cursor_t)
        key = (idx, line.kind, line.key, line.depth, line.folded, w.t0, w.t1, w.width, cursor_col, self.generation)
        if not self._has_overlay(idx, line):
            cached = self._strips.get(key)
            if cached is not None:
                return gutter + cached
        cells = self._plot_cells(line, self._bounds)
        self._path_overlay(line, cells)
        if line.kind != RowKind.GROUP and 0 <= cursor_col < w.width and (int(cells.keys[cursor_col]) >> 8) == 0:
            cells.chars[cursor_col] = CURSOR_LINE
            cells.keys[cursor_col] = style_key(int(Sid.RULE), int(Role.LABEL))
        overlaid = self._overlays(idx, line, cells)
        segs = to_segments(cells, lambda k: self._style(k, idx))
        if not overlaid:
            self._strips[key] = segs
        return gutter + segs

    def plot_text(self, idx: int) -> str:
        """The characters of a line's plot area as drawn now (for tests and the benchmark)."""
        line = self.lines[idx]
        self._frame()
        return self._plot_cells(line, self._bounds).text

    # ---- mouse ---------------------------------------------------------------------------------------------
    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self.top = max(0, min(self.top + 3, max(0, len(self.lines) - self.visible_lines)))
        self.refresh()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.top = max(0, self.top - 3)
        self.refresh()
