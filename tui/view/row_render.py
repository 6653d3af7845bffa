"""What each terminal cell of a timeline row shows: characters, style keys and the event drawn there.

Rows are first binned (:func:`~gputop_trace.tui.view.timeline_math.bin_row`). A run of two or more cells that each
hold one and the same event (and nothing else) is drawn as a *box*: filled, labelled with the event's name (and
duration when it fits), the label cut with an ellipsis when it does not fit and left out when even three letters
do not; a box that touches the previous box starts with a ``▏`` so that neighbours never merge. Every other
non-empty cell is a *dense* cell: a block whose height is the busy fraction of the cell (at least one eighth, so
no event ever disappears), ``▉`` when several events fill it (so a run of many short kernels reads as a comb, not
as one long one). No Textual; Rich only in :func:`to_segments`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rich.segment import Segment
from rich.style import Style

from gputop_trace.model.arrays import I64
from gputop_trace.tui.view.memory_lane import ALLOCATED, MemoryRow, column_max
from gputop_trace.tui.view.palette import Overlay, Role, Sid, style_key
from gputop_trace.tui.view.timeline_data import GapMarks, TimelineData
from gputop_trace.tui.view.timeline_math import EIGHTHS, Bins, RowData, bin_row, fit_label, label_with_duration, runs
from gputop_trace.units import format_ns

BOUNDARY = "▏"
DENSE_MANY = "▉"
GAP_FILL = "╌"


@dataclass
class Cells:
    """The plot area of one row: a character, a style key and the event drawn (``-1``: none) per column."""

    chars: list[str]
    keys: I64
    events: I64
    bins: Bins

    @property
    def width(self) -> int:
        return len(self.chars)

    @property
    def text(self) -> str:
        """The characters as one string (what a test or a screen reader sees)."""
        return "".join(self.chars)

    def overlay(self, c0: int, c1: int, overlay: Overlay) -> None:
        """Mark columns ``c0..c1`` (inclusive, clipped) with a highlight."""
        c0, c1 = max(c0, 0), min(c1, self.width - 1)
        if c0 > c1:
            return
        k = self.keys[c0 : c1 + 1]
        self.keys[c0 : c1 + 1] = (k & 0xFFFF) | (int(overlay) << 16)


_BLANK, _DENSE, _BOX = int(Role.BLANK), int(Role.DENSE), int(Role.BOX)
_GLYPHS = np.array([*EIGHTHS, DENSE_MANY])


def _glyphs(bins: Bins) -> list[str]:
    level = np.ceil(np.clip(bins.fraction, 0.0, 1.0) * 8).astype(np.int64)
    level = np.where(bins.count > 0, np.maximum(level, 1), 0)
    level[(bins.count >= 2) & (level == 8)] = 9
    out: list[str] = _GLYPHS[level].tolist()
    return out


def event_row_cells(
    data: TimelineData,
    row: RowData,
    bounds: I64,
    *,
    box_fill: str = " ",
    label_of: Callable[[int], str] | None = None,
) -> Cells:
    """Cells of one row of events on the columns ``bounds`` (see the module docstring)."""
    bins = bin_row(row, bounds)
    width = bounds.shape[0] - 1
    dom = bins.dominant
    has = dom >= 0
    events = np.full(width, -1, dtype=np.int64)
    sid = np.zeros(width, dtype=np.int64)
    if has.any():
        hit = row.events[dom[has]]
        events[has] = hit
        sid[has] = data.sids(hit)
    role = np.where(has, _DENSE, _BLANK)
    chars = _glyphs(bins)
    # a box is a run of cells showing one event alone; a cell shared with other events stays a dense cell so
    # that the smaller events in it remain visible
    alone = np.where(bins.count == 1, dom, -2 - np.arange(width, dtype=np.int64))
    rs, rl = runs(alone)
    boxes = (rl >= 2) & (alone[rs] >= 0)
    if boxes.any():
        label = label_of or data.label
        durs = data.trace.dur_ns
        box_s = rs[boxes].tolist()
        box_n = rl[boxes].tolist()
        box_ev = events[rs[boxes]].tolist()
        prev_end = -2
        for s, n, ev in zip(box_s, box_n, box_ev, strict=True):
            start = s
            if s == prev_end:  # touches the previous box: draw the boundary
                chars[s] = BOUNDARY
                start = s + 1
            prev_end = s + n
            avail = s + n - start
            text = label_with_duration(label(ev), format_ns(int(durs[ev]), sep=""), avail) if avail >= 4 else ""
            chars[start : start + avail] = text + box_fill * (avail - len(text))
        for s, n in zip(box_s, box_n, strict=True):
            role[s : s + n] = _BOX
    keys = (role << 8) | sid
    return Cells(chars, keys, events, bins)


def util_row_cells(util: RowData, gaps: GapMarks | None, bounds: I64) -> Cells:
    """Cells of a GPU utilization strip: block height = busy fraction of the cell; cells with no GPU work that are
    at least half inside an idle gap found by the detector are drawn as ``╌``, with the gap's label where it
    fits."""
    bins = bin_row(util, bounds)
    width = bounds.shape[0] - 1
    chars = _glyphs(Bins(np.minimum(bins.count, 1), bins.busy, bins.dominant, bins.col_len))
    has = bins.count > 0
    keys = np.where(has, style_key(int(Sid.UTIL), int(Role.DENSE)), 0).astype(np.int64)
    events = np.full(width, -1, dtype=np.int64)
    if gaps is not None and len(gaps.row):
        gb = bin_row(gaps.row, bounds)
        # a cell is marked when it holds no GPU work at all and a reported gap covers at least half of it: work
        # stays visible between gaps at every zoom, long idle stretches read as marked and labelled
        in_gap = (gb.busy * 2 >= np.maximum(gb.col_len, 1)) & (gb.dominant >= 0) & (bins.busy == 0)
        gap_id = np.where(in_gap, gb.dominant, -1)
        rs, rl = runs(gap_id)
        for s, n in zip(rs.tolist(), rl.tolist(), strict=True):
            g = int(gap_id[s])
            if g < 0:
                continue
            text = fit_label(gaps.labels[g], n - 1) if n >= 5 else ""
            fill = (GAP_FILL + text if text else "") + GAP_FILL * (n - len(text) - (1 if text else 0))
            chars[s : s + n] = list(fill)
            keys[s : s + n] = style_key(int(Sid.GAP), int(Role.BOX))
            events[s : s + n] = -2 - g  # gaps are encoded as -2 - gap index
    return Cells(chars, keys, events, bins)


def rule_cells(width: int, char: str = "┈") -> Cells:
    """A thin rule across the plot area (group header lines)."""
    z = np.zeros(width, dtype=np.int64)
    keys = np.full(width, style_key(int(Sid.RULE), int(Role.LABEL)), dtype=np.int64)
    return Cells([char] * width, keys, np.full(width, -1, dtype=np.int64), Bins(z, z, z - 1, z))


def to_segments(cells: Cells, style_of: Callable[[int], Style]) -> list[Segment]:
    """Rich segments for the cells: one per run of equal style keys; ``style_of(key)`` gives each run's style
    (a :meth:`Palette.style`, or a cached composition of it with the widget's base style and click metadata)."""
    if not cells.width:
        return []
    text = cells.text
    starts, lengths = runs(cells.keys)
    keys = cells.keys[starts].tolist()
    return [
        Segment(text[s : s + n], style_of(k)) for s, n, k in zip(starts.tolist(), lengths.tolist(), keys, strict=True)
    ]


def memory_row_cells(row: MemoryRow, bounds: I64, which: str = ALLOCATED) -> Cells:
    """Cells of a memory row: block height = the column's most bytes of the series over the row's scale."""
    width = len(bounds) - 1
    level = column_max(row, bounds, which)
    eighths = np.ceil(8 * level / max(row.scale or row.peak, 1)).astype(np.int64)
    eighths = np.where(level > 0, np.clip(eighths, 1, 8), 0)
    glyphs = np.array(list(EIGHTHS))
    chars: list[str] = glyphs[eighths].tolist()
    keys = np.where(level > 0, style_key(int(Sid.MEMORY), int(Role.DENSE)), 0).astype(np.int64)
    z = np.zeros(width, dtype=np.int64)
    return Cells(chars, keys, np.full(width, -1, dtype=np.int64), Bins(z, z, z - 1, z))
