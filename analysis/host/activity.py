"""What a late rank's host was doing while the other ranks waited for it: one definition for the straggler verdict
(``gputop-trace ranks``, the Ranks panel, the collective-wait finding) and the rank headers of ranks side by side.

The window is from the moment the first other rank reached the collective to the moment the late rank reached it
(ns, the late rank's own clock). Among the CPU threads of the late rank's process (the thread that launched the
collective first, then the others, busiest first), the host operator (CPU operator, sync or OS call; Python frames
are left out: they wrap everything) that overlaps the window longest names the activity. It is the operator the
code called directly (the outermost one: ``aten::randn``, not the ``aten::normal_`` inside it), as the Gaps panel
names what the host was busy with, prefixed by the innermost annotation range it ran in with step numbers as
``<n>``: ``step_<n> › aten::randn``. When no operator overlaps the window, the innermost range holding its start
(a bare ``step_<n>``: untraced host work), else :data:`NO_ACTIVITY`. Times are int64 ns relative to the trace
start.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.analysis.overlap import largest_overlap, outermost_only
from gputop_trace.model.arrays import I64, distinct, isin
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace

#: The activity when no thread of the process was in anything during the window.
NO_ACTIVITY = "(no traced host activity)"
#: Kinds of events that are host operators (what the thread was busy running).
HOST_OP_KINDS: tuple[Kind, ...] = (Kind.CPU_OP, Kind.SYNC, Kind.OSRT)

_TRAILING_NUMBER = re.compile(r"(?<=\D)\d+$")


def generic_range(name: str) -> str:
    """``step_3`` → ``step_<n>``: the same range in different steps counts as one activity."""
    return _TRAILING_NUMBER.sub("<n>", name)


def host_threads(trace: Trace, rank: int, launch_lane: int) -> list[int]:
    """The CPU-thread lanes of ``rank``'s process (the process of ``launch_lane`` when it is ``>= 0``): the
    launching thread first, then the others, busiest (most events) first."""
    pid = trace.lanes[launch_lane].pid if launch_lane >= 0 else None
    threads = [
        i
        for i, ln in enumerate(trace.lanes)
        if ln.kind == LaneKind.CPU_THREAD and ln.rank == rank and (pid is None or ln.pid == pid) and i != launch_lane
    ]
    threads.sort(key=lambda ln: -int(trace.lane_offsets[ln + 1] - trace.lane_offsets[ln]))
    return ([launch_lane] if launch_lane >= 0 else []) + threads


def _outer_ops(trace: Trace, lane: int) -> I64:
    """The outermost host operators of a lane (trace indices, start order)."""
    sl = trace.lane_slice(lane)
    pos = np.flatnonzero(isin(trace.kind[sl], np.array([int(k) for k in HOST_OP_KINDS], dtype=np.uint8)))
    outer: I64 = outermost_only(trace.end_ns[sl], pos) + sl.start
    return outer


def host_activity(
    trace: Trace, rank: int, launch_lanes: npt.ArrayLike, starts: npt.ArrayLike, ends: npt.ArrayLike
) -> list[str]:
    """For each window ``[starts[i], ends[i])`` (ns; an empty window is the instant ``starts[i]``) of ``rank``
    with the lane of the call that launched its collective (``-1`` unknown), what its host was doing, in the
    words of the module text (``step_<n> › aten::randn``, ``step_<n>``, :data:`NO_ACTIVITY`)."""
    lanes = np.asarray(launch_lanes, dtype=np.int64)
    ws = np.asarray(starts, dtype=np.int64)
    we = np.maximum(np.asarray(ends, dtype=np.int64), ws + 1)
    out = [NO_ACTIVITY] * len(ws)
    for launch in distinct(lanes).tolist():
        q = np.flatnonzero(lanes == launch)
        threads = host_threads(trace, rank, int(launch))
        best = np.full(len(q), -1, dtype=np.int64)
        best_ns = np.zeros(len(q), dtype=np.int64)
        for lane in threads:
            cand = _outer_ops(trace, lane)
            if not len(cand):
                continue
            ev, ov = largest_overlap(trace, np.full(len(q), lane), ws[q], we[q], cand)
            better = ov > best_ns  # ties stay with the earlier thread (the launching one first)
            best[better], best_ns[better] = ev[better], ov[better]
        has = best >= 0
        if has.any():
            ops = best[has]
            rng = innermost_enclosing(trace, trace.lane[ops], trace.start_ns[ops], (Kind.RANGE,))
            for j, op, r in zip(np.flatnonzero(has).tolist(), ops.tolist(), rng.tolist(), strict=True):
                name = trace.event_name(op)
                out[int(q[j])] = f"{generic_range(trace.event_name(r))} › {name}" if r >= 0 else name
        # no operator in the window: the innermost range holding its start, on the first thread that has one
        todo = q[~has]
        for lane in threads:
            if not len(todo):
                break
            rng = innermost_enclosing(trace, np.full(len(todo), lane), ws[todo], (Kind.RANGE,))
            for i, r in zip(todo.tolist(), rng.tolist(), strict=True):
                if r >= 0:
                    out[i] = generic_range(trace.event_name(r))
            todo = todo[rng < 0]
    return out


def host_activity_weights(activities: list[str], weights: list[int], top: int = 5) -> list[tuple[str, int]]:
    """The activities tallied by weight (ns of the others' waiting), largest first, at most ``top``."""
    tally: dict[str, int] = {}
    for a, w in zip(activities, weights, strict=True):
        tally[a] = tally.get(a, 0) + int(w)
    return sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
