"""Per-trace context of the critical path (event roles, lane running ends, collective peers, first stream waits)
and the step windows. See :mod:`gputop_trace.analysis.critical_path.path`. Times int64 ns, model time."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from gputop_trace.analysis.critical_path.model import (
    ROLE_COLL,
    ROLE_COPY,
    ROLE_CPU,
    ROLE_KERNEL,
    ROLE_LAUNCH,
    ROLE_NONE,
    ROLE_RANGE,
    ROLE_SYNC,
)
from gputop_trace.analysis.host.classes import is_sync_call_name
from gputop_trace.analysis.steps import find_steps, is_step_name
from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.kernel_names import collective_op
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace


@dataclass
class PathContext:
    """Per-trace arrays shared by every step (built once)."""

    trace: Trace
    role: np.ndarray  # per event
    cummax_end: I64  # per event: running max of end within its lane
    coll_peers: dict[int, tuple[int, list[int]]]  # collective kernel -> (shortest duration, matched peer kernels)
    coll_note: str | None
    first_wait: dict[int, int]  # rank -> start of its first stream-wait call (ns)
    name_flags: np.ndarray  # per name id: 1 sync call, 2 step range, 4 collective, 8 stream wait, 16 event record


_CTX: weakref.WeakKeyDictionary[Trace, PathContext] = weakref.WeakKeyDictionary()


def path_context(trace: Trace) -> PathContext:
    """The trace's :class:`PathContext`, built on first use and kept with the trace."""
    ctx = _CTX.get(trace)
    if ctx is None:
        ctx = _build_context(trace)
        _CTX[trace] = ctx
    return ctx


def _build_context(trace: Trace) -> PathContext:
    n = len(trace)
    role = np.zeros(n, dtype=np.int8)
    lane_kind = trace.lane_kind[trace.lane] if n else np.zeros(0, dtype=np.uint8)
    on_cpu = lane_kind == LaneKind.CPU_THREAD
    on_gpu = lane_kind == LaneKind.GPU_STREAM
    kind = trace.kind
    positive = trace.dur_ns > 0
    # per-name flags, computed once per distinct name
    used = distinct(trace.name) if n else np.zeros(0, dtype=np.int32)
    flags = np.zeros(len(trace.names), dtype=np.int8)  # 1 sync, 2 step range, 4 collective
    for i in used.tolist():
        nm = trace.names[i]
        flags[i] = (1 if is_sync_call_name(nm) else 0) | (2 if is_step_name(nm) else 0)
        flags[i] |= 4 if collective_op(nm) is not None else 0
        flags[i] |= (8 if nm.endswith("StreamWaitEvent") else 0) | (16 if "EventRecord" in nm else 0)
    f = flags[trace.name] if n else flags[:0]
    cpu = on_cpu & positive
    role[cpu & (kind == Kind.CPU_OP)] = ROLE_CPU
    role[cpu & (kind == Kind.RANGE) & ((f & 2) == 0)] = ROLE_RANGE
    role[cpu & (kind == Kind.API)] = ROLE_LAUNCH
    role[cpu & ((kind == Kind.SYNC) | (((kind == Kind.API) | (kind == Kind.CPU_OP)) & ((f & 1) != 0)))] = ROLE_SYNC
    gpu = on_gpu & positive
    role[gpu & (kind == Kind.KERNEL)] = ROLE_KERNEL
    role[gpu & (kind == Kind.KERNEL) & ((f & 4) != 0)] = ROLE_COLL
    role[gpu & ((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))] = ROLE_COPY
    # a copy call that returns only after its copy ended (pageable memory, cudaMemcpy) waited for it
    copies = np.flatnonzero(role == ROLE_COPY)
    caller = trace.launch_of[copies]
    has = caller >= 0
    copies, caller = copies[has], caller[has]
    blocking = (trace.end_ns[copies] <= trace.end_ns[caller]) & (role[caller] == ROLE_LAUNCH)
    role[caller[blocking]] = ROLE_SYNC
    cummax = trace.end_ns.copy()
    off = trace.lane_offsets
    for ln in range(len(trace.lanes)):
        a, b = int(off[ln]), int(off[ln + 1])
        if b > a:
            cummax[a:b] = np.maximum.accumulate(cummax[a:b])
    peers, note = _collective_peers(trace, role)
    first_wait: dict[int, int] = {}
    if n:
        waits = np.flatnonzero((role == ROLE_LAUNCH) & ((f & 8) != 0))
        for r, t in zip(trace.event_rank[waits].tolist(), trace.start_ns[waits].tolist(), strict=True):
            first_wait[int(r)] = min(first_wait.get(int(r), int(t)), int(t))
    return PathContext(trace, role, cummax, peers, note, first_wait, flags)


def _collective_peers(trace: Trace, role: np.ndarray) -> tuple[dict[int, tuple[int, list[int]]], str | None]:
    ranks = trace.meta.ranks
    if len(ranks) < 2 or not np.any(role == ROLE_COLL):
        return {}, None
    world = trace.meta.world_size
    if world is not None and world > len(ranks):
        return {}, (
            f"collectives are not joined across ranks: {len(ranks)} of the job's {world} ranks are loaded, so the "
            "path stays on each rank"
        )
    out: dict[int, tuple[int, list[int]]] = {}
    from gputop_trace.analysis.ranks.stragglers import match_collectives  # cross-rank matching: only with 2+ ranks

    for g in match_collectives(trace):
        for row in range(len(g)):
            evs = g.event[row]
            if (evs < 0).any():
                continue
            ids = [int(e) for e in evs.tolist()]
            shortest = int(trace.dur_ns[evs].min())
            for e in ids:
                out[e] = (shortest, [p for p in ids if p != e])
    return out, None


def events_in_window(ctx: PathContext, lanes: list[int], s: int, e: int) -> I64:
    """Events of the graph on ``lanes`` that overlap ``[s, e)``, lane by lane in the model's order."""
    tr = ctx.trace
    parts: list[I64] = []
    for ln in lanes:
        a, b = int(tr.lane_offsets[ln]), int(tr.lane_offsets[ln + 1])
        if b <= a:
            continue
        lo = a + int(np.searchsorted(ctx.cummax_end[a:b], s, side="right"))
        hi = a + int(np.searchsorted(tr.start_ns[a:b], e, side="left"))
        if hi <= lo:
            continue
        idx = np.arange(lo, hi, dtype=np.int64)
        keep = (ctx.role[lo:hi] != ROLE_NONE) & (tr.end_ns[lo:hi] > s)
        parts.append(idx[keep])
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def noted_step_windows(trace: Trace, ctx: PathContext) -> list[tuple[int, int, str, int, int, str | None]]:
    """(rank, step index, step name, start, end, note) of every step; a rank without step ranges is one
    pseudo-step spanning its recorded work."""
    out: list[tuple[int, int, str, int, int, str | None]] = []
    have: set[int] = set()
    for st in find_steps(trace):
        have.add(st.rank)
        for i in range(len(st)):
            s = int(st.start_ns[i])
            out.append((st.rank, i, trace.event_name(int(st.events[i])), s, s + int(st.dur_ns[i]), None))
    used = ctx.role != ROLE_NONE
    for rk in sorted({int(x) for x in trace.lane_rank.tolist()} - have):
        sel = used & (trace.event_rank == rk)
        if not sel.any():
            continue
        s, e = int(trace.start_ns[sel].min()), int(trace.end_ns[sel].max())
        out.append((rk, 0, "", s, e, "no step ranges: the whole recording of the rank is one step"))
    out.sort(key=lambda w: (w[0], w[1]))
    return out
