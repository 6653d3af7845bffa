"""The arithmetic of the Diff view's stacking, free of Textual: the same step of BASE and TEST, one above the
other on one time axis, each run's time 0 at its own step start, so a reader sees where TEST's step got longer or
shorter. Per run: a header (the step's length, TEST's change), the busy strip of each GPU of the run's first
rank, its busiest GPU stream and the top rows of the thread holding the step range. Times are int64 ns from each
run's trace start unless a name says otherwise."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.analysis.diff.compare import RunDiff
from gputop_trace.analysis.diff.steps import RunSteps
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.rank_compare import FIT_MARGIN, LineKind
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.units import format_ns

#: Rows of the step's thread shown per run.
THREAD_ROWS = 2
SIDES: tuple[str, ...] = ("BASE", "TEST")


@dataclass(frozen=True)
class StackLine:
    """One line of the stacking: ``side`` 0 (BASE) or 1 (TEST), a :class:`LineKind`, its label, and what it
    draws (a lane row, or a GPU's busy strip: ``rank``/``device``)."""

    side: int
    kind: LineKind
    label: str
    lane: int = -1
    depth: int = 0
    rank: int = 0
    device: int = -1


@dataclass(frozen=True)
class StackedStep:
    """Pair ``index`` of the compared steps: each run's step label, span on its own clock (``start``, ``end``)
    and the lines to draw."""

    index: int
    labels: tuple[str, str]
    spans: tuple[tuple[int, int], tuple[int, int]]
    lines: tuple[StackLine, ...]

    @property
    def offsets(self) -> tuple[int, int]:
        """Each run's time 0: its step start."""
        return self.spans[0][0], self.spans[1][0]

    def window(self, margin: float = FIT_MARGIN) -> tuple[int, int]:
        """The relative window that shows the longer of the two steps, with ``margin`` of it on each side."""
        longest = max(e - s for s, e in self.spans)
        pad = round(longest * margin)
        return -pad, max(longest, 1) + pad


def _step_of(steps: RunSteps, k: int) -> tuple[int, tuple[int, int]]:
    rank = min(steps.spans[k])
    return rank, steps.spans[k][rank]


def _run_lines(side: int, data: TimelineData, rank: int, span: tuple[int, int], header: str) -> list[StackLine]:
    trace = data.trace
    out = [StackLine(side, LineKind.HEADER, header, rank=rank)]
    for r, d in sorted(data.util):
        if r == rank:
            out.append(StackLine(side, LineKind.UTIL, f"GPU {d} busy", rank=r, device=d))
    per_lane = np.diff(trace.lane_offsets)
    streams = [i for i, ln in enumerate(trace.lanes) if ln.kind == LaneKind.GPU_STREAM and ln.rank == rank]
    if streams:
        lane = max(streams, key=lambda i: (int(per_lane[i]), -i))
        out.append(StackLine(side, LineKind.EVENTS, clean(trace.lanes[lane].name), lane=lane, rank=rank))
    lane, top = _step_thread(trace_data=data, rank=rank, span=span)
    if lane >= 0:
        rows = int(trace.lane_rows[lane])
        for k, d in enumerate(range(top, min(rows, top + THREAD_ROWS))):
            label = clean(trace.lanes[lane].name) if k == 0 else "┊"
            out.append(StackLine(side, LineKind.EVENTS, label, lane=lane, depth=d, rank=rank))
    return out


def _step_thread(*, trace_data: TimelineData, rank: int, span: tuple[int, int]) -> tuple[int, int]:
    """The lane and row of the step range starting at ``span[0]`` on ``rank`` (else the rank's busiest thread
    from its top row; ``-1`` none)."""
    trace = trace_data.trace
    rng = trace.of_kind(Kind.RANGE)
    hit = rng[(trace.start_ns[rng] == span[0]) & (trace.end_ns[rng] == span[1]) & (trace.event_rank[rng] == rank)]
    if len(hit):
        e = int(hit[0])
        return int(trace.lane[e]), int(trace.depth[e])
    per_lane = np.diff(trace.lane_offsets)
    threads = [i for i, ln in enumerate(trace.lanes) if ln.kind == LaneKind.CPU_THREAD and ln.rank == rank]
    return (max(threads, key=lambda i: (int(per_lane[i]), -i)), 0) if threads else (-1, 0)


def stacked_step(d: RunDiff, data: tuple[TimelineData, TimelineData], index: int) -> StackedStep:
    """The stacking of compared pair ``index`` (``0 <= index < len(d.pairs)``)."""
    kb, kt = int(d.pairs.base[index]), int(d.pairs.test[index])
    rb, sb = _step_of(d.base_steps, kb)
    rt, st = _step_of(d.test_steps, kt)
    lb, lt = d.base_steps.labels[kb], d.test_steps.labels[kt]
    db, dt = sb[1] - sb[0], st[1] - st[0]
    change = f" · {100.0 * (dt - db) / db:+.1f} %" if db else ""
    lines = [
        *_run_lines(0, data[0], rb, sb, f"BASE {clean(lb)} {format_ns(db)}"),
        *_run_lines(1, data[1], rt, st, f"TEST {clean(lt)} {format_ns(dt)}{change}"),
    ]
    return StackedStep(index, (lb, lt), (sb, st), tuple(lines))


def stack_title(step: StackedStep, count: int) -> str:
    """The stacking's title: which step, of how many, the keys."""
    b, t = (clean(x) for x in step.labels)
    which = b if b == t else f"{b} / {t}"
    return f"Same step, both runs · {which} ({step.index + 1} of {count}) · time 0 = each run's step start"
