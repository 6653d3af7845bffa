"""The critical path in the app, without Textual: where each step's path is drawn on the timeline, what walking
it with ``n`` / ``N`` selects, the words that say what a segment is, and the rows of the Critical path panel
(breakdown by category, top items with the what-if column).

The paths come from :func:`gputop_trace.analysis.critical_path.path.critical_paths` (one :class:`StepPath` per step and
rank). Every time is in ns (model time, from the trace start); every share is a percentage 0–100 of the step's path
length (``StepPath.length_ns``).

Drawing: a segment tied to an event is drawn over its own time span on the row of its event (the row of the lane
it is on, at the event's depth); a segment with no event but a lane (an idle stretch the analysis put on a stream)
on that lane's first row; a segment with neither (idle, or a wait not tied to one event) on the GPU busy strip of
its rank's GPU that the path runs on (every GPU of the rank when the path touches none, and the lane of the nearest
segment when the rank has no GPU strip: a CPU-only trace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.critical_path.path import CATEGORIES, PathSegment, StepPath, WhatIf
from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.presentation.kernel_labels import kernel_labels
from gputop_trace.report.critical_path_json import CATEGORY_TITLES
from gputop_trace.safe_text import clean
from gputop_trace.units import format_ns, plural

#: Categories whose items are kernels, shown by their short label (the full name is in the row's sentence).
_KERNEL_CATEGORIES = ("kernel", "collective")
#: Rows of the panel's item table (the path's items beyond these are summed in the note under it).
MAX_ITEMS = 200

#: A span drawn on one timeline row: [start, end) in ns, the index of its segment in the path, and whether the
#: segment is idle time (drawn in its own style).
Span = tuple[int, int, int, bool]
#: Spans as arrays: starts, ends (ns) and whether each is idle time.
SpanArrays = tuple[I64, I64, npt.NDArray[np.bool_]]


def category_title(category: str) -> str:
    """The words for a category (the category itself when it is not one of :data:`CATEGORIES`)."""
    return CATEGORY_TITLES.get(category, category)


def pct(part: int, whole: int) -> float:
    """``part`` as a percentage of ``whole`` (0–100; 0 when ``whole`` is 0)."""
    return 100.0 * part / whole if whole > 0 else 0.0


def format_pct(value: float) -> str:
    """A share with one decimal (``12.3%``); ``<0.1%`` for a share too small to show but not zero."""
    if 0 < value < 0.05:
        return "<0.1%"
    return f"{value:.1f}%"


# ---- steps ---------------------------------------------------------------------------------------------------
def step_title(path: StepPath, *, multi_rank: bool) -> str:
    """``ProfilerStep#3`` (``rank 1 · ProfilerStep#3`` when the trace has several ranks); ``whole trace`` when the
    trace is one pseudo-step."""
    name = clean(path.step_name) if path.step_name else "whole trace"
    return f"rank {path.rank} · {name}" if multi_rank else name


def path_at(paths: Sequence[StepPath], rank: int | None, t: int) -> int:
    """The index in ``paths`` of the step holding time ``t`` (ns) on ``rank`` (any rank when None or when the rank
    has no step there); the nearest step of the rank before ``t`` when none holds it; 0 when there is none."""
    if not paths:
        return 0
    for want_rank in (rank, None):
        best = -1
        for i, p in enumerate(paths):
            if want_rank is not None and p.rank != want_rank:
                continue
            if p.start_ns <= t < p.start_ns + max(p.dur_ns, 1):
                return i
            if p.start_ns <= t and (best < 0 or p.start_ns > paths[best].start_ns):
                best = i
        if best >= 0:
            return best
    return 0


# ---- drawing -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PathMarks:
    """Where one step's path is drawn: ``rows`` maps a timeline row (lane, depth) to its spans, ``strips`` a GPU
    busy strip (rank, device) to its spans; spans are sorted by start."""

    rows: dict[tuple[int, int], tuple[Span, ...]] = field(default_factory=dict)
    strips: dict[tuple[int, int], tuple[Span, ...]] = field(default_factory=dict)
    #: where walking to segment i lands: (rank, device) of the strip for a segment drawn on a strip, else None
    strip_of: dict[int, tuple[int, int]] = field(default_factory=dict)
    _arrays: dict[object, SpanArrays] = field(default_factory=dict, compare=False, repr=False)

    def row_spans(self, lane: int, depth: int, *, folded: bool = False) -> list[Span]:
        """The spans of row (lane, depth); a folded lane's first row shows those of all its rows."""
        if not folded:
            return list(self.rows.get((lane, depth), ()))
        out = [s for (ln, _), spans in self.rows.items() if ln == lane for s in spans]
        return sorted(out)

    def strip_spans(self, rank: int, device: int) -> list[Span]:
        """The spans drawn on the busy strip of GPU ``device`` of ``rank``."""
        return list(self.strips.get((rank, device), ()))

    def row_window(self, lane: int, depth: int, t0: int, t1: int, *, folded: bool = False) -> SpanArrays:
        """The spans of row (lane, depth) (all its rows' when ``folded``) that overlap ``[t0, t1)``, as arrays
        (starts, ends, idle): found by bisection, as a frame draws only the window and a step's path can have
        thousands of segments on one row."""
        if folded:
            return self._window(("folded", lane), lambda: self.row_spans(lane, depth, folded=True), t0, t1)
        return self._window(("row", lane, depth), lambda: self.rows.get((lane, depth), ()), t0, t1)

    def strip_window(self, rank: int, device: int, t0: int, t1: int) -> SpanArrays:
        """The spans on a GPU busy strip that overlap ``[t0, t1)`` (as :meth:`row_window`)."""
        return self._window(("strip", rank, device), lambda: self.strips.get((rank, device), ()), t0, t1)

    def _window(self, key: object, spans: Callable[[], Sequence[Span]], t0: int, t1: int) -> SpanArrays:
        arrays = self._arrays.get(key)
        if arrays is None:
            table = np.array([(s, e, int(idle)) for s, e, _, idle in spans()], dtype=np.int64).reshape(-1, 3)
            arrays = self._arrays[key] = (table[:, 0].copy(), table[:, 1].copy(), table[:, 2] > 0)
        starts, ends, idle = arrays
        # the spans are sorted and disjoint (a path's segments never overlap in time), so the ends are sorted too
        lo = int(np.searchsorted(ends, t0, side="right"))
        hi = int(np.searchsorted(starts, t1, side="left"))
        return starts[lo:hi], ends[lo:hi], idle[lo:hi]

    def __bool__(self) -> bool:
        return bool(self.rows or self.strips)


def path_marks(trace: Trace, path: StepPath, strips: Iterable[tuple[int, int]]) -> PathMarks:
    """Where each segment of ``path`` is drawn (see the module docstring); ``strips`` are the (rank, device) keys
    of the GPU busy strips the timeline has."""
    strip_keys = set(strips)
    rows: dict[tuple[int, int], list[Span]] = {}
    on_strips: dict[tuple[int, int], list[Span]] = {}
    strip_of: dict[int, tuple[int, int]] = {}
    segs = path.segments
    n_lanes = len(trace.lanes)
    gpus = sorted(
        {
            (trace.lanes[s.lane].rank, trace.lanes[s.lane].device)
            for s in segs
            if 0 <= s.lane < n_lanes and trace.lanes[s.lane].kind == LaneKind.GPU_STREAM
        }
    )
    gpus = [g for g in gpus if g in strip_keys]
    rank_strips = sorted(k for k in strip_keys if k[0] == path.rank)
    for i, s in enumerate(segs):
        span = (s.start_ns, s.start_ns + max(s.dur_ns, 1), i, s.category == "idle")
        if 0 <= s.event < len(trace):
            rows.setdefault((int(trace.lane[s.event]), int(trace.depth[s.event])), []).append(span)
        elif 0 <= s.lane < n_lanes:
            rows.setdefault((s.lane, 0), []).append(span)
        else:
            targets = [g for g in gpus if g[0] == s.rank] or [k for k in rank_strips if k[0] == s.rank]
            if targets:
                for key in targets:
                    on_strips.setdefault(key, []).append(span)
                strip_of[i] = targets[0]
                continue
            row = _nearest_row(trace, segs, i)
            if row is not None:
                rows.setdefault(row, []).append(span)
    return PathMarks(
        {k: tuple(sorted(v)) for k, v in rows.items()},
        {k: tuple(sorted(v)) for k, v in on_strips.items()},
        strip_of,
    )


def _nearest_row(trace: Trace, segs: Sequence[PathSegment], i: int) -> tuple[int, int] | None:
    """The row of the segment nearest to segment ``i`` that has one (the previous first), or None."""
    for j in sorted(range(len(segs)), key=lambda j: (abs(j - i), j > i)):
        s = segs[j]
        if 0 <= s.event < len(trace):
            return int(trace.lane[s.event]), int(trace.depth[s.event])
        if 0 <= s.lane < len(trace.lanes):
            return s.lane, 0
    return None


# ---- walking -------------------------------------------------------------------------------------------------
def walk(path: StepPath, current: int, direction: int, cursor_ns: int) -> int:
    """The segment ``n`` (``direction`` 1) or ``N`` (-1) goes to from segment ``current``; -1 past either end.
    With none walked yet (``current`` -1) both start from the cursor: the segment under it, else ``n`` the first
    one after it and ``N`` the last one before it."""
    n = len(path.segments)
    if not n:
        return -1
    if current < 0 or current >= n:
        segs = path.segments
        if direction > 0:  # the first segment that ends after the cursor (holds it or lies after it)
            return next((i for i, s in enumerate(segs) if s.start_ns + max(s.dur_ns, 1) > cursor_ns), -1)
        return next((i for i in range(n - 1, -1, -1) if segs[i].start_ns <= cursor_ns), -1)
    nxt = current + (1 if direction > 0 else -1)
    return nxt if 0 <= nxt < n else -1


def segment_words(path: StepPath, i: int) -> str:
    """What segment ``i`` is, in one line: ``path 3/42 · kernel · sgemm… · 1.20 ms · 8.7% of the path``."""
    s = path.segments[i]
    share = format_pct(pct(s.dur_ns, path.length_ns))
    return (
        f"path {i + 1:,}/{len(path.segments):,} · {category_title(s.category)} · {clean(s.label)} · "
        f"{format_ns(s.dur_ns)} · {share} of the path"
    )


def segment_status(path: StepPath, i: int) -> str:
    """The short form for the status bar: ``path 3/42 kernel 8.7%``."""
    s = path.segments[i]
    share = format_pct(pct(s.dur_ns, path.length_ns))
    return f"path {i + 1:,}/{len(path.segments):,} {category_title(s.category)} {share}"


def segment_rows(path: StepPath, i: int, *, multi_rank: bool) -> list[tuple[str, str]]:
    """Rows for the details pane about segment ``i``, above the event's own details."""
    s = path.segments[i]
    return [
        ("critical path", f"segment {i + 1:,} of {len(path.segments):,} of {step_title(path, multi_rank=multi_rank)}"),
        (
            "on the path",
            f"{category_title(s.category)} · {format_ns(s.dur_ns)} from {format_ns(s.start_ns, precision=6)}",
        ),
        ("share", f"{format_pct(pct(s.dur_ns, path.length_ns))} of the path ({format_ns(path.length_ns)})"),
    ]


def event_rows(path: StepPath, event: int, start_ns: int, end_ns: int, *, multi_rank: bool) -> list[tuple[str, str]]:
    """Rows for the details pane about an event selected while the path is shown (not by walking it): how much of
    it is on the path (its segments, their time and share), or that it is not, when it overlaps the step
    (``[start_ns, end_ns)`` is the event's span); nothing for an event outside the step."""
    mine = [s for s in path.segments if s.event == event]
    step = step_title(path, multi_rank=multi_rank)
    if mine:
        ns = sum(s.dur_ns for s in mine)
        return [
            ("critical path", f"{plural(len(mine), 'segment')} of {step}: {format_ns(ns)} on the path"),
            ("share", f"{format_pct(pct(ns, path.length_ns))} of the path ({format_ns(path.length_ns)})"),
        ]
    if start_ns < path.start_ns + path.dur_ns and end_ns > path.start_ns:
        return [("critical path", f"not on the path of {step}")]
    return []


def first_segment_of(path: StepPath, category: str, label: str) -> int:
    """The first segment of item (category, label) on the path, or -1."""
    return next((i for i, s in enumerate(path.segments) if s.category == category and s.label == label), -1)


# ---- the panel -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ItemRow:
    """One row of the panel's table: an item on the path, its time there (ns, and % of the path) and, for the
    top items, the what-if (the step's path length if it ran 2× faster or took no time, and the savings)."""

    category: str
    label: str
    on_path_ns: int
    share_pct: float
    what_if: WhatIf | None
    #: the label as the table shows it: a kernel's short label (as on the timeline), else the label (cleaned)
    short: str = ""

    @property
    def saving_2x_ns(self) -> int | None:
        """ns saved if the item ran 2× faster (None without a what-if)."""
        w = self.what_if
        return max(w.step_ns - w.if_2x_ns, 0) if w is not None else None

    @property
    def saving_gone_ns(self) -> int | None:
        """ns saved if the item took no time (None without a what-if)."""
        w = self.what_if
        return max(w.step_ns - w.if_gone_ns, 0) if w is not None else None


def item_rows(path: StepPath, limit: int = MAX_ITEMS) -> list[ItemRow]:
    """The path's items, most time on the path first, each with its what-if when the analysis made one."""
    whatifs = {(w.category, w.item): w for w in path.what_if}
    items = path.by_item[:limit]
    short = kernel_labels(label for c, label, _ in items if c in _KERNEL_CATEGORIES)
    return [
        ItemRow(
            c,
            label,
            ns,
            pct(ns, path.length_ns),
            whatifs.get((c, label)),
            clean(short.get(label, label) if c in _KERNEL_CATEGORIES else label),
        )
        for c, label, ns in items
    ]


def breakdown_items(path: StepPath) -> list[tuple[str, int, float]]:
    """(category, ns, % of the path) of every category with time on the path, most first (ties in
    :data:`CATEGORIES` order)."""
    order = {c: i for i, c in enumerate(CATEGORIES)}
    cats = [(c, ns) for c, ns in path.breakdown.items() if ns > 0]
    cats.sort(key=lambda x: (-x[1], order.get(x[0], len(order))))
    return [(c, ns, pct(ns, path.length_ns)) for c, ns in cats]


def breakdown_lines(path: StepPath, width: int) -> list[str]:
    """The breakdown as ``kernel 8.10 ms 58.1%`` entries joined by `` · ``, packed greedily into lines of at most
    ``width`` cells (an entry is never broken; one wider than ``width`` gets a line of its own)."""
    entries = [f"{category_title(c)} {format_ns(ns)} {format_pct(p)}" for c, ns, p in breakdown_items(path)]
    if not entries:
        return ["nothing on the path"]
    lines: list[str] = []
    cur = ""
    for e in entries:
        cand = f"{cur} · {e}" if cur else e
        if cur and len(cand) > width:
            lines.append(cur)
            cur = e
        else:
            cur = cand
    lines.append(cur)
    return lines


def step_line(path: StepPath, index: int, count: int, *, multi_rank: bool, width: int = 1_000) -> str:
    """The panel's first line: which step, its time and the path's length (and its % of the step): the longest
    wording that fits in ``width`` cells (the shortest one, cut by the caller, when none does)."""
    title = step_title(path, multi_rank=multi_rank)
    step, length = format_ns(path.dur_ns), format_ns(path.length_ns)
    share = format_pct(pct(path.length_ns, path.dur_ns))
    forms = (
        f"{title} ({index + 1} of {count}) · step {step} · critical path {length} ({share} of the step) · "
        f"{len(path.segments):,} segments",
        f"{title} ({index + 1}/{count}) · step {step} · path {length} ({share}) · {len(path.segments):,} segments",
        f"{title} ({index + 1}/{count}) · step {step} · path {length} ({share})",
    )
    return next((f for f in forms if len(f) <= width), forms[-1])
