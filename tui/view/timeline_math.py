"""The timeline's arithmetic, free of Textual: time ↔ column mapping, zoom and pan, level-of-detail binning of a
row of events into terminal cells, label fitting and ruler ticks. numpy only, all times int64 nanoseconds.

A view shows the time window ``[t0, t1)`` on ``width`` columns. Column ``c`` covers the integer times ``t`` with
``floor((t - t0) * width / (t1 - t0)) == c``; :func:`column_bounds` gives those boundaries exactly, so a test can
say which cell a known event lands in at any zoom.

A *row* is a list of events that never overlap, sorted by start (one row of a lane, or the busy union of a GPU).
:class:`RowData` holds its starts, ends and the prefix sum of durations; :func:`bin_row` maps it onto the columns
of a window with a handful of ``searchsorted`` calls: per cell the number of events touching it, the busy time
inside it and a representative (dominant) event. The work is O(width · log n), independent of how many events the
row holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gputop_trace.model.arrays import F64, I64

#: Smallest window, in ns per column: one nanosecond per terminal cell.
MIN_NS_PER_COL = 1


# ---------------------------------------------------------------------------------------------------------
# windows
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Window:
    """A time window ``[t0, t1)`` (ns) drawn on ``width`` columns."""

    t0: int
    t1: int
    width: int

    def __post_init__(self) -> None:
        if self.t1 <= self.t0:
            raise ValueError(f"empty window [{self.t0}, {self.t1})")
        if self.width < 1:
            raise ValueError(f"window width {self.width} < 1")

    @property
    def span(self) -> int:
        """Length of the window (ns)."""
        return self.t1 - self.t0

    @property
    def ns_per_col(self) -> float:
        """Time covered by one column (ns)."""
        return self.span / self.width

    def col_of(self, t: int) -> int:
        """The column that time ``t`` falls in (may be outside ``0 .. width-1`` for times outside the window)."""
        return ((int(t) - self.t0) * self.width) // self.span

    def cols_of(self, t: I64) -> I64:
        """:meth:`col_of` for an array of times."""
        out: I64 = ((np.asarray(t, dtype=np.int64) - np.int64(self.t0)) * np.int64(self.width)) // np.int64(self.span)
        return out

    def time_of(self, col: int) -> int:
        """The first integer time inside column ``col``."""
        return self.t0 + -((-col * self.span) // self.width)

    def contains(self, t: int) -> bool:
        """Whether ``t`` lies inside the window."""
        return self.t0 <= t < self.t1


def column_bounds(w: Window) -> I64:
    """The ``width + 1`` boundaries of the columns: column ``c`` is ``[b[c], b[c+1])`` (integer ns, exact)."""
    c = np.arange(w.width + 1, dtype=np.int64)
    out: I64
    if w.span * w.width < (1 << 62):
        # ceil(c * span / width) in exact integer arithmetic
        out = np.int64(w.t0) + -((-c * np.int64(w.span)) // np.int64(w.width))
    else:  # pragma: no cover - spans of more than 100 days
        out = np.int64(w.t0) + np.ceil(c * (w.span / w.width)).astype(np.int64)
    return out


def label_width(width: int) -> int:
    """Columns of the label column left of a plot ``width`` columns wide in all (timeline, rank comparison)."""
    return max(8, min(28, width // 5, width - 10))


def min_span(width: int) -> int:
    """The narrowest window allowed on ``width`` columns (ns)."""
    return max(1, width) * MIN_NS_PER_COL


def clamp_window(t0: int, t1: int, lo: int, hi: int, width: int) -> tuple[int, int]:
    """Keep a window inside ``[lo, hi)`` (the trace extent), no narrower than :func:`min_span`, and no wider
    than the extent. Moves the window rather than shrinking it when it sticks out on one side."""
    extent = max(hi - lo, min_span(width))
    span = min(max(t1 - t0, min_span(width)), extent)
    t0 = min(max(t0, lo), lo + extent - span)
    return t0, t0 + span


def zoom_window(t0: int, t1: int, pivot: int, factor: float, *, lo: int, hi: int, width: int) -> tuple[int, int]:
    """Scale the window by ``factor`` (< 1 zooms in) keeping ``pivot`` at the same screen position."""
    span = t1 - t0
    new_span = max(min_span(width), round(span * factor))
    frac = (pivot - t0) / span if span else 0.5
    frac = min(max(frac, 0.0), 1.0)
    n0 = round(pivot - frac * new_span)
    return clamp_window(n0, n0 + new_span, lo, hi, width)


def pan_window(t0: int, t1: int, fraction: float, *, lo: int, hi: int, width: int) -> tuple[int, int]:
    """Shift the window by ``fraction`` of its width (negative: towards earlier times)."""
    span = t1 - t0
    shift = round(span * fraction)
    if shift == 0:
        shift = 1 if fraction > 0 else -1
    return clamp_window(t0 + shift, t1 + shift, lo, hi, width)


def window_around(start: int, end: int, span: int, *, lo: int, hi: int, width: int) -> tuple[int, int]:
    """A window of ``span`` ns centred on the interval ``[start, end)``."""
    mid = (start + end) // 2
    t0 = mid - span // 2
    return clamp_window(t0, t0 + span, lo, hi, width)


def fit_interval(start: int, end: int, *, margin: float, lo: int, hi: int, width: int) -> tuple[int, int]:
    """A window showing ``[start, end)`` with ``margin`` (fraction of its length) of context on each side."""
    length = max(end - start, 1)
    pad = max(1, round(length * margin))
    return clamp_window(start - pad, end + pad, lo, hi, width)


# ---------------------------------------------------------------------------------------------------------
# rows and binning
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RowData:
    """One row of non-overlapping events, sorted by start.

    ``events`` are event indices in the trace (``-1`` for synthetic intervals such as a busy union); ``starts``
    and ``ends`` are ns; ``vis_ends`` equals ``ends`` except that a zero-length event occupies 1 ns so that it
    stays visible; ``cum`` is the running sum of durations (``cum[i] = sum(ends[:i+1] - starts[:i+1])``).
    Arrays may be read-only views into the trace's columns.
    """

    events: I64
    starts: I64
    ends: I64
    vis_ends: I64
    cum: I64

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    @staticmethod
    def from_intervals(events: I64, starts: I64, ends: I64) -> RowData:
        """Build a row from events (sorted by start, not overlapping); copies nothing it does not have to."""
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        durs = ends - starts
        vis = np.maximum(ends, starts + 1) if bool(np.any(durs == 0)) else ends
        cum = np.cumsum(durs, dtype=np.int64)
        return RowData(np.asarray(events, dtype=np.int64), starts, ends, vis, cum)

    @staticmethod
    def empty() -> RowData:
        z = np.zeros(0, dtype=np.int64)
        return RowData(z, z, z, z, z)

    def covered_before(self, t: I64) -> I64:
        """Busy time of the row before each time in ``t`` (ns): ``sum(clip(t - start, 0, duration))``."""
        k = np.searchsorted(self.starts, t, side="right")
        if not len(self):
            return np.zeros(np.shape(t), dtype=np.int64)
        last = np.maximum(k - 1, 0)
        cov = self.cum[last] - np.maximum(self.ends[last] - t, 0)
        out: I64 = np.where(k > 0, cov, 0)
        return out

    def busy_between(self, a: int, b: int) -> int:
        """Busy time inside ``[a, b)`` (ns)."""
        c = self.covered_before(np.array([a, b], dtype=np.int64))
        return int(c[1] - c[0])


@dataclass(frozen=True)
class Bins:
    """A row mapped onto the columns of a window.

    ``count[c]`` events touch column ``c``; ``busy[c]`` ns of the column are covered; ``dominant[c]`` is the
    position (index into the row's arrays) of the event covering most of the column among the first, the last
    and those covering the column's quarter points, ``-1`` for an empty column; ``ns_per_col[c]`` the column's
    length in ns.
    """

    count: I64
    busy: I64
    dominant: I64
    col_len: I64

    @property
    def fraction(self) -> F64:
        """Busy fraction of every column (0..1)."""
        out: F64 = self.busy / np.maximum(self.col_len, 1)
        return out


def bin_row(row: RowData, bounds: I64) -> Bins:
    """Map a row onto columns ``[bounds[c], bounds[c+1])``; see :class:`Bins`. O(width · log n)."""
    width = bounds.shape[0] - 1
    col_len = np.diff(bounds)
    if not len(row):
        z = np.zeros(width, dtype=np.int64)
        return Bins(z, z.copy(), np.full(width, -1, dtype=np.int64), col_len)
    left, right = bounds[:-1], bounds[1:]
    cov = row.covered_before(bounds)
    busy = np.diff(cov)
    lo = np.searchsorted(row.vis_ends, left, side="right")  # first event ending after the column starts
    hi = np.searchsorted(row.starts, right, side="left")  # events starting before the column ends
    count = np.maximum(hi - lo, 0)
    # candidates for the dominant event: the first and last event touching the column, and the events covering
    # its quarter points (an event covering more than half of the column always covers its middle)
    q = left[:, None] + (col_len[:, None] * np.array([1, 2, 3], dtype=np.int64)) // 4
    cover_q = np.searchsorted(row.starts, q, side="right") - 1
    cand = np.concatenate([lo[:, None], cover_q, (hi - 1)[:, None]], axis=1)
    n = len(row)
    valid = (cand >= lo[:, None]) & (cand < hi[:, None])
    cc = np.clip(cand, 0, n - 1)
    ov = np.minimum(row.vis_ends[cc], right[:, None]) - np.maximum(row.starts[cc], left[:, None])
    ov = np.where(valid, ov, -1)
    pick = np.argmax(ov, axis=1)
    dominant = cand[np.arange(width), pick]
    dominant = np.where(count > 0, dominant, -1)
    return Bins(count.astype(np.int64), busy.astype(np.int64), dominant.astype(np.int64), col_len)


def runs(values: I64) -> tuple[I64, I64]:
    """Start positions and lengths of the runs of equal consecutive values."""
    n = values.shape[0]
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    brk = np.flatnonzero(values[1:] != values[:-1]) + 1
    starts = np.concatenate(([0], brk)).astype(np.int64)
    lengths = np.diff(np.concatenate((starts, [n]))).astype(np.int64)
    return starts, lengths


#: Partial-height blocks: index = busy eighths (0 = empty).
EIGHTHS = " ▁▂▃▄▅▆▇█"


def fraction_glyphs(fraction: F64, count: I64) -> list[str]:
    """One character per cell: its busy fraction as a block of 1–8 eighths; a cell holding any event shows at
    least the lowest block, an empty cell a space."""
    level = np.ceil(np.clip(fraction, 0.0, 1.0) * 8).astype(np.int64)
    level = np.where(count > 0, np.maximum(level, 1), 0)
    return [EIGHTHS[v] for v in level.tolist()]


# ---------------------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------------------
ELLIPSIS = "…"


def fit_label(text: str, width: int, *, min_chars: int = 3) -> str:
    """``text`` fitted into ``width`` cells: whole when it fits, else cut with an ellipsis keeping at least
    ``min_chars`` characters of it; ``""`` when not even that fits. Never longer than ``width``."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width - 1 < min_chars:
        return ""
    return text[: width - 1] + ELLIPSIS


def label_with_duration(name: str, duration: str, width: int) -> str:
    """``"name 12.3 µs"`` when both fit in ``width``, else the fitted name alone."""
    both = f"{name} {duration}"
    if len(both) <= width:
        return both
    return fit_label(name, width)


# ---------------------------------------------------------------------------------------------------------
# ruler
# ---------------------------------------------------------------------------------------------------------
_UNITS = (("s", 1_000_000_000), ("ms", 1_000_000), ("µs", 1_000), ("ns", 1))


def _unit_for(magnitude: float) -> tuple[str, int]:
    for name, factor in _UNITS:
        if magnitude >= factor:
            return name, factor
    return "ns", 1


def nice_steps(smallest: float) -> list[int]:
    """Tick steps 1, 2, 5 × 10^k ns from the first one ≥ ``smallest`` upwards (a few decades)."""
    k = max(0, math.floor(math.log10(max(smallest, 1.0))))
    out: list[int] = []
    for e in range(k, k + 20):
        for m in (1, 2, 5):
            s = m * 10**e
            if s >= smallest:
                out.append(s)
    return out


def format_tick(t: int, unit: str, factor: int, decimals: int) -> str:
    """A tick label: ``t`` ns in ``unit`` with ``decimals`` digits after the point."""
    return f"{t / factor:.{decimals}f} {unit}"


def tick_format(step: int, magnitude: float) -> tuple[str, int, int]:
    """Unit (chosen from the size of the times shown) and the number of decimals that tell ticks ``step`` ns
    apart: ``(unit, factor, decimals)``."""
    unit, factor = _unit_for(magnitude)
    decimals = 0
    while decimals < 9 and (step * 10**decimals) % factor:
        decimals += 1
    return unit, factor, decimals


@dataclass(frozen=True)
class Tick:
    """A ruler tick: the column it marks, its time (ns) and its label."""

    col: int
    t: int
    label: str


def ruler_ticks(w: Window, *, gap: int = 2) -> list[Tick]:
    """Ticks at a round step whose labels never overlap (each label plus ``gap`` spaces fits between two ticks)
    and never repeat: the number of decimals follows the step, the unit follows the times shown."""
    magnitude = max(abs(w.t0), abs(w.t1), 1)
    for step in nice_steps(w.ns_per_col * 4):
        unit, factor, decimals = tick_format(step, magnitude)
        first = -((-w.t0) // step) * step
        times = list(range(first, w.t1, step))
        if not times:
            continue
        labels = [format_tick(t, unit, factor, decimals) for t in times]
        longest = max(len(s) for s in labels) + 1  # "│" + label
        step_cols = step / w.ns_per_col
        if step_cols < longest + gap:
            continue
        out = []
        for t, lab in zip(times, labels, strict=True):
            col = w.col_of(t)
            if col >= 0 and col + 1 + len(lab) <= w.width:
                out.append(Tick(col, t, lab))
        return out
    return []


def cursor_label(w: Window, t: int) -> str:
    """The cursor's time with one decimal more than it takes to tell neighbouring columns apart
    (``53.12402 ms``), so that rounding never shows a neighbouring column's time."""
    step = nice_steps(max(w.ns_per_col, 1.0))[0]
    unit, factor, decimals = tick_format(step, max(abs(w.t0), abs(w.t1), 1))
    return format_tick(t, unit, factor, min(decimals + 1, 9) if factor > 1 else 0)


@dataclass(frozen=True)
class Ruler:
    """The ruler line: its text (``width`` characters) and where the cursor flag is (``[flag_start,
    flag_end)``; both -1 when the cursor is outside the window)."""

    text: str
    flag_start: int
    flag_end: int
    cursor_col: int


def ruler_line(w: Window, cursor_t: int, *, gap: int = 2) -> Ruler:
    """Ticks with labels, and a flag ``▼12.3456 ms`` at the cursor (or ``12.3456 ms▼`` when it would not fit
    to the right); ticks the flag would touch are left out, so nothing overlaps."""
    chars = [" "] * w.width
    col = w.col_of(cursor_t)
    f0 = f1 = -1
    flag = ""
    if 0 <= col < w.width:
        label = cursor_label(w, cursor_t)
        flag = "▼" + label
        f0 = col
        if col + len(flag) > w.width:
            flag = label + "▼"
            f0 = col - len(flag) + 1
        if f0 < 0:  # narrower than the label: the flag alone
            flag, f0 = "▼", col
        f1 = f0 + len(flag)
    for tick in ruler_ticks(w, gap=gap):
        end = tick.col + 1 + len(tick.label)
        if f0 >= 0 and tick.col < f1 + 1 and end > f0 - 1:
            continue
        chars[tick.col] = "│"
        chars[tick.col + 1 : end] = list(tick.label)
    if f0 >= 0:
        chars[f0:f1] = list(flag)
    return Ruler("".join(chars), f0, f1, col if 0 <= col < w.width else -1)
