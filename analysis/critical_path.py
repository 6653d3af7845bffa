"""Critical path of each step: which chain of work sets the step time (first version; see the contract)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.analysis.steps import find_steps
from gputop_trace.model.kinds import GPU_BUSY_KINDS, Kind, LaneKind
from gputop_trace.model.trace import Trace

#: The categories a path segment can have.
CATEGORIES = ("cpu_op", "launch", "kernel", "copy", "sync_wait", "collective", "idle")


@dataclass(frozen=True)
class PathSegment:
    """One piece of the critical path, in time order. Times in ns, model time (trace-relative)."""

    start_ns: int
    dur_ns: int
    category: str
    label: str
    event: int
    lane: int
    rank: int


@dataclass(frozen=True)
class WhatIf:
    """The step time if one item on the path were 2x faster or gone, by re-running the longest path on the
    modified graph (not a share of the path). All ns."""

    item: str
    category: str
    on_path_ns: int
    step_ns: int
    if_2x_ns: int
    if_gone_ns: int


@dataclass(frozen=True)
class StepPath:
    """The critical path of one step of one rank (ns)."""

    rank: int
    step: int
    step_name: str
    start_ns: int
    dur_ns: int
    length_ns: int
    segments: tuple[PathSegment, ...]
    breakdown: dict[str, int]
    by_item: tuple[tuple[str, str, int], ...]
    what_if: tuple[WhatIf, ...]


def critical_paths(
    trace: Trace, *, step: int | None = None, rank: int | None = None, what_if: bool = True
) -> list[StepPath]:
    """First version: the busiest GPU stream of each step with its gaps as idle (to be replaced by the graph)."""
    out: list[StepPath] = []
    for steps in find_steps(trace):
        if rank is not None and steps.rank != rank:
            continue
        for i in range(len(steps)):
            if step is not None and i != step:
                continue
            s, d = int(steps.start_ns[i]), int(steps.dur_ns[i])
            out.append(_busiest_stream(trace, steps.rank, i, trace.event_name(int(steps.events[i])), s, d))
    return out


def _busiest_stream(trace: Trace, rank: int, i: int, name: str, s: int, d: int) -> StepPath:
    best: list[PathSegment] = []
    best_busy = -1
    for lane, ln in enumerate(trace.lanes):
        if ln.kind != LaneKind.GPU_STREAM or ln.rank != rank:
            continue
        sl = trace.lane_slice(lane)
        ev = np.arange(sl.start, sl.stop)
        ev = ev[np.isin(trace.kind[ev], [int(k) for k in GPU_BUSY_KINDS])]
        ev = ev[(trace.start_ns[ev] >= s) & (trace.end_ns[ev] <= s + d)]
        segs: list[PathSegment] = []
        t = s
        busy = 0
        for e in ev.tolist():
            a, b = max(int(trace.start_ns[e]), t), int(trace.end_ns[e])
            if b <= t:
                continue
            if a > t:
                segs.append(PathSegment(t, a - t, "idle", "idle: GPU", -1, lane, rank))
            cat = "kernel" if trace.kind[e] == Kind.KERNEL else "copy"
            segs.append(PathSegment(a, b - a, cat, trace.event_name(e), e, lane, rank))
            busy += b - a
            t = b
        if busy > best_busy:
            best, best_busy = segs, busy
    length = sum(sg.dur_ns for sg in best)
    breakdown = {c: 0 for c in CATEGORIES}
    items: dict[tuple[str, str], int] = {}
    for sg in best:
        breakdown[sg.category] += sg.dur_ns
        items[(sg.category, sg.label)] = items.get((sg.category, sg.label), 0) + sg.dur_ns
    by_item = tuple(sorted(((c, lb, n) for (c, lb), n in items.items()), key=lambda x: -x[2]))
    start = best[0].start_ns if best else s
    return StepPath(rank, i, name, start, d, length, tuple(best), breakdown, by_item, ())
