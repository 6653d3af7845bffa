"""Critical path of each step: which chain of work sets the step time, what it is made of, and what the step would
take if one item on it were 2x faster or gone. All times are int64 ns, model time (trace-relative).

**The graph** (one per step of a rank, built from the events that overlap the step window ``[S, E]``, clipped
to it): on every CPU thread of the rank (operators, annotation ranges other than the step ranges themselves, runtime
calls, host synchronisation rows) and every GPU stream (kernels, memcpys, memsets), each event's start and end
are nodes, in time order per lane. Consecutive nodes of a lane are joined by a *lane edge*; the time between them
belongs to the innermost event open there (its self time), and that is the edge's intrinsic weight, except that
nothing open (an idle gap) and a synchronising call (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
``cudaEventSynchronize``, a non-async ``cudaMemcpy``, a copy call that returned only after its copy ended, such
as ``cudaMemcpyAsync`` from pageable memory, ``Kind.SYNC`` rows) weigh 0: that time is waiting, not work.
Cross-lane edges, all of weight 0 unless said:

- **launch**: a launch call's start → the kernel/copy's start (Kineto correlation ids / ``ac2g`` flows, nsys
  ``correlationId``);
- **sync**: the GPU operation of the rank that ended last inside a synchronising call → the call's end;
- **event wait** (inferred: Kineto and nsys record no event ids on the calls): a ``cudaStreamWaitEvent`` on a thread
  makes the next GPU operation launched from that thread wait for the last operation launched on another stream
  before the latest ``cudaEventRecord`` of that thread (before the wait call when it recorded none); the edge is
  kept only if that operation ended before the waiting one started. On a rank that issued stream waits, a GPU
  operation that started after both its launch and its stream's previous operation waited for the operation of
  another stream of its device that ended last before it started (the wait was issued from another thread);
- **join** (inferred): time an annotation range spends with nothing of its thread inside it weighs 0; the node
  that ends such a span depends on the latest end of an operation on another thread of the rank inside it (the
  main thread's ``backward`` range returns when the autograd thread's last operation ends); when no other thread
  worked then, the span stays on the path as the range's own host time;
- **wake** (inferred: threads record no hand-offs): a CPU thread resuming after an idle gap depends on the start
  of the innermost operation open then on another thread of the rank, or when none is open on the latest end of
  one on another thread before it resumed;
- **collective**: with every rank of the job loaded, a collective kernel's end depends on the start of the matched
  kernel (:func:`~gputop_trace.analysis.stragglers.match_collectives`) on every other rank, with weight the
  instance's shortest duration over the ranks (the transfer itself); the kernel's own lane edge weighs that too,
  the rest of its time is waiting for peers.

**Timing**: ``ready(n) = max over preds (t(pred) + w)``; the residual ``r(n) = t(n) - ready(n) >= 0`` is delay
the graph does not explain. On the path it is *launch* latency when the binding predecessor is a launch edge,
*sync_wait* when it is a sync edge or the node ends a synchronising call, *collective* inside a collective kernel,
and *idle* otherwise. Every edge goes forward in recorded time, so recorded time order is topological; replaying
``t'(n) = max over preds (t'(pred) + w') + r(n)`` with the recorded weights gives back every recorded time exactly
(tested on the corpus).

**The path**: from the step's sink (the latest end of any event of the rank's lanes in the window) back along each
node's binding predecessor (ties prefer the lane edge when it carries work, then launch/sync/collective, then
event-wait and wake edges, then an idle lane edge) to the
step start ``S``. Its segments are the edges' weights and the residuals walked, so they sum exactly to its length
``sink - S`` (``<= E - S``; idle on the path included, so it is never shorter than any lane's busy time in the
step). A step with no recorded end after its last activity has a path shorter than the step by that tail.

**What-if**: the step's path length if every instance of an item (a kernel, an operator, a runtime call, a wait
kind) in the step ran 2x faster (its weights and residuals halved, floor) or took no time, by replaying the whole
graph with the changed weights; the residuals of other nodes stay as recorded (a kernel that started late for a
reason the trace does not show still starts that much after what it waits for).

Traces without step ranges have one pseudo-step per rank: the rank's whole recording, named ``""``.
"""

from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.enclosing import nesting_parents
from gputop_trace.analysis.host import is_sync_call_name
from gputop_trace.analysis.steps import find_steps, is_step_name
from gputop_trace.analysis.stragglers import match_collectives
from gputop_trace.model.arrays import I64
from gputop_trace.model.kernel_names import collective_op
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace

#: The categories a path segment can have.
CATEGORIES = ("cpu_op", "launch", "kernel", "copy", "sync_wait", "collective", "idle")
#: How many items of a path get a what-if.
WHAT_IF_TOP = 5


@dataclass(frozen=True)
class PathSegment:
    """One piece of the critical path, in time order. Times in ns, model time (trace-relative)."""

    start_ns: int
    dur_ns: int
    category: str  # one of CATEGORIES
    label: str  # op name, kernel name, "cudaLaunchKernel", "launch latency", "idle: GPU" ...
    event: int  # trace event index it comes from; -1 for idle / waits not tied to one event
    lane: int  # lane index in the trace's lanes table it is drawn on; -1 if none
    rank: int


@dataclass(frozen=True)
class WhatIf:
    """The step time if one item on the path were 2x faster or gone, by re-running the longest path on the
    modified graph (not a share of the path). All ns; savings are ``step_ns - if_2x_ns`` and
    ``step_ns - if_gone_ns`` (>= 0)."""

    item: str
    category: str
    on_path_ns: int
    step_ns: int
    if_2x_ns: int
    if_gone_ns: int


@dataclass(frozen=True)
class StepPath:
    """The critical path of one step of one rank (ns). ``segments`` are in time order and sum exactly to
    ``length_ns``, as do ``breakdown`` (category → ns) and ``by_item`` ((category, label, ns), largest first)."""

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
    #: what the user must know about how the path was found (collectives not joined, pseudo-step ...)
    notes: tuple[str, ...] = ()
    #: edges of each kind in the step's graph: launch, sync, event_wait, collective
    edges: dict[str, int] = field(default_factory=dict)
    #: (category, label) -> (start ns, event index or -1, lane index) of the item's first piece on the path: where
    #: to point at an item without the segments (``segments=False``)
    first_piece: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)


# ---- internal graph ----------------------------------------------------------------------------------------------
_CPU_KINDS = (Kind.CPU_OP, Kind.API, Kind.SYNC, Kind.RANGE)
_GPU_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
_CAT = {c: i for i, c in enumerate(CATEGORIES)}
# event roles
_R_NONE, _R_CPU, _R_LAUNCH, _R_SYNC, _R_KERNEL, _R_COPY, _R_COLL, _R_RANGE = range(8)
_ROLE_CAT = {
    _R_CPU: _CAT["cpu_op"],
    _R_RANGE: _CAT["cpu_op"],
    _R_LAUNCH: _CAT["launch"],
    _R_SYNC: _CAT["sync_wait"],
    _R_KERNEL: _CAT["kernel"],
    _R_COPY: _CAT["copy"],
    _R_COLL: _CAT["collective"],
}
# cross-edge kinds
_X_LAUNCH, _X_SYNC, _X_EVENT, _X_COLL = range(4)
_EDGE_NAMES = ("launch", "sync", "event_wait", "collective", "wake", "join")
# labels that are not event names
_SPECIAL = ("idle: CPU", "idle: GPU", "launch latency")
_NEG = np.iinfo(np.int64).min // 4


@dataclass
class _Graph:
    """Nodes of one step's graph, lane blocks contiguous, each block in time order (ns)."""

    s: int
    t: I64
    lane: I64
    ev: I64
    first: np.ndarray
    wc: I64  # lane-edge weight (from the previous node of the lane, or from S for a lane's first node)
    wc_item: I64  # item key of that weight (-1 none)
    own: I64  # event owning the lane edge into the node (-1 none)
    x1: I64  # launch / sync / collective predecessor node (-1 none)
    w1: I64
    k1: I64  # its _X_ kind
    w1_item: I64
    x2: I64  # event-wait predecessor node (-1 none)
    r: I64
    bind: I64  # 0 lane edge, 1 x1, 2 x2
    r_item: I64
    sink_nodes: I64  # the last node of each of the step rank's lanes
    edges: dict[str, int]


@dataclass
class _Ctx:
    """Per-trace arrays shared by every step (built once)."""

    trace: Trace
    role: np.ndarray  # per event
    cummax_end: I64  # per event: running max of end within its lane
    coll_peers: dict[int, tuple[int, list[int]]]  # collective kernel -> (shortest duration, matched peer kernels)
    coll_note: str | None
    first_wait: dict[int, int]  # rank -> start of its first stream-wait call (ns)
    name_flags: np.ndarray  # per name id: 1 sync call, 2 step range, 4 collective, 8 stream wait, 16 event record


_CTX: weakref.WeakKeyDictionary[Trace, _Ctx] = weakref.WeakKeyDictionary()


def _context(trace: Trace) -> _Ctx:
    ctx = _CTX.get(trace)
    if ctx is None:
        ctx = _build_context(trace)
        _CTX[trace] = ctx
    return ctx


def _build_context(trace: Trace) -> _Ctx:
    n = len(trace)
    role = np.zeros(n, dtype=np.int8)
    lane_kind = trace.lane_kind[trace.lane] if n else np.zeros(0, dtype=np.uint8)
    on_cpu = lane_kind == LaneKind.CPU_THREAD
    on_gpu = lane_kind == LaneKind.GPU_STREAM
    kind = trace.kind
    positive = trace.dur_ns > 0
    # per-name flags, computed once per distinct name
    used = np.unique(trace.name) if n else np.zeros(0, dtype=np.int32)
    flags = np.zeros(len(trace.names), dtype=np.int8)  # 1 sync, 2 step range, 4 collective
    for i in used.tolist():
        nm = trace.names[i]
        flags[i] = (1 if is_sync_call_name(nm) else 0) | (2 if is_step_name(nm) else 0)
        flags[i] |= 4 if collective_op(nm) is not None else 0
        flags[i] |= (8 if nm.endswith("StreamWaitEvent") else 0) | (16 if "EventRecord" in nm else 0)
    f = flags[trace.name] if n else flags[:0]
    cpu = on_cpu & positive
    role[cpu & (kind == Kind.CPU_OP)] = _R_CPU
    role[cpu & (kind == Kind.RANGE) & ((f & 2) == 0)] = _R_RANGE
    role[cpu & (kind == Kind.API)] = _R_LAUNCH
    role[cpu & ((kind == Kind.SYNC) | (((kind == Kind.API) | (kind == Kind.CPU_OP)) & ((f & 1) != 0)))] = _R_SYNC
    gpu = on_gpu & positive
    role[gpu & (kind == Kind.KERNEL)] = _R_KERNEL
    role[gpu & (kind == Kind.KERNEL) & ((f & 4) != 0)] = _R_COLL
    role[gpu & ((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))] = _R_COPY
    # a copy call that returns only after its copy ended (pageable memory, cudaMemcpy) waited for it
    copies = np.flatnonzero(role == _R_COPY)
    caller = trace.launch_of[copies]
    has = caller >= 0
    copies, caller = copies[has], caller[has]
    blocking = (trace.end_ns[copies] <= trace.end_ns[caller]) & (role[caller] == _R_LAUNCH)
    role[caller[blocking]] = _R_SYNC
    cummax = trace.end_ns.copy()
    off = trace.lane_offsets
    for ln in range(len(trace.lanes)):
        a, b = int(off[ln]), int(off[ln + 1])
        if b > a:
            cummax[a:b] = np.maximum.accumulate(cummax[a:b])
    peers, note = _collective_peers(trace, role)
    first_wait: dict[int, int] = {}
    if n:
        waits = np.flatnonzero((role == _R_LAUNCH) & ((f & 8) != 0))
        for r, t in zip(trace.event_rank[waits].tolist(), trace.start_ns[waits].tolist(), strict=True):
            first_wait[int(r)] = min(first_wait.get(int(r), int(t)), int(t))
    return _Ctx(trace, role, cummax, peers, note, first_wait, flags)


def _collective_peers(trace: Trace, role: np.ndarray) -> tuple[dict[int, tuple[int, list[int]]], str | None]:
    ranks = trace.meta.ranks
    if len(ranks) < 2 or not np.any(role == _R_COLL):
        return {}, None
    world = trace.meta.world_size
    if world is not None and world > len(ranks):
        return {}, (
            f"collectives are not joined across ranks: {len(ranks)} of the job's {world} ranks are loaded, so the "
            "path stays on each rank"
        )
    out: dict[int, tuple[int, list[int]]] = {}
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


def _select(ctx: _Ctx, lanes: list[int], s: int, e: int) -> I64:
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
        keep = (ctx.role[lo:hi] != _R_NONE) & (tr.end_ns[lo:hi] > s)
        parts.append(idx[keep])
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _item_key(cat: np.ndarray, label: np.ndarray) -> I64:
    return np.asarray(cat, dtype=np.int64) * (1 << 40) + np.asarray(label, dtype=np.int64)


def _build_graph(ctx: _Ctx, rank: int, s: int, e: int) -> _Graph | None:
    tr = ctx.trace
    n_names = len(tr.names)
    mine = [
        i for i, ln in enumerate(tr.lanes) if ln.rank == rank and ln.kind in (LaneKind.CPU_THREAD, LaneKind.GPU_STREAM)
    ]
    peer_lanes: list[int] = []
    if ctx.coll_peers:
        peer_lanes = [
            i
            for i, ln in enumerate(tr.lanes)
            if ln.rank != rank and ln.kind in (LaneKind.CPU_THREAD, LaneKind.GPU_STREAM)
        ]
    lanes = mine + peer_lanes
    ev = _select(ctx, lanes, s, e)
    if not len(ev):
        return None
    role = ctx.role[ev].astype(np.int64)
    cs = np.maximum(tr.start_ns[ev], s)
    ce = np.minimum(tr.end_ns[ev], e)
    lane_of = tr.lane[ev].astype(np.int64)
    m = len(ev)
    # nesting parents per lane (events of a lane are contiguous and sorted by start, longest first)
    parent = np.full(m, -1, dtype=np.int64)
    brk = np.flatnonzero(np.diff(lane_of)) + 1
    bounds = np.concatenate(([0], brk, [m]))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        p = nesting_parents(cs[a:b], ce[a:b])
        parent[a:b] = np.where(p >= 0, p + a, -1)
    # nodes: 2 per event; within a lane sorted by (t, end before start, nesting order)
    j = np.arange(m, dtype=np.int64)
    n_lane = np.concatenate((lane_of, lane_of))
    n_t = np.concatenate((cs, ce))
    n_end = np.concatenate((np.zeros(m, dtype=np.int64), np.ones(m, dtype=np.int64)))
    n_j = np.concatenate((j, j))
    tie = np.concatenate((j, -j))
    order = np.lexsort((tie, 1 - n_end, n_t, n_lane))
    n_lane, n_t, n_end, n_j = n_lane[order], n_t[order], n_end[order], n_j[order]
    nn = 2 * m
    node_of = np.empty(nn, dtype=np.int64)
    node_of[order] = np.arange(nn, dtype=np.int64)
    snode, enode = node_of[:m], node_of[m:]
    first = np.ones(nn, dtype=bool)
    first[1:] = n_lane[1:] != n_lane[:-1]
    # owner of the span after each node: the event itself after its start, its parent after its end
    after = np.where(n_end == 0, n_j, parent[n_j])
    own = np.full(nn, -1, dtype=np.int64)
    own[1:] = after[:-1]
    own[first] = -1
    prev_t = np.empty(nn, dtype=np.int64)
    prev_t[1:] = n_t[:-1]
    prev_t[first] = s
    seg = n_t - prev_t
    own_role = np.where(own >= 0, role[np.maximum(own, 0)], _R_NONE)
    work = (own_role != _R_NONE) & (own_role != _R_SYNC) & (own_role != _R_RANGE)
    wc = np.where(work, seg, 0)
    own_name = np.where(own >= 0, tr.name[ev[np.maximum(own, 0)]], 0)
    own_cat = np.array([_ROLE_CAT.get(x, 0) for x in range(8)], dtype=np.int64)[own_role]
    wc_item = np.where(work, _item_key(own_cat, own_name), -1)
    edges = {k: 0 for k in _EDGE_NAMES}
    x1 = np.full(nn, -1, dtype=np.int64)
    w1 = np.zeros(nn, dtype=np.int64)
    k1 = np.full(nn, -1, dtype=np.int64)
    w1_item = np.full(nn, -1, dtype=np.int64)
    x2 = np.full(nn, -1, dtype=np.int64)
    sorted_ev = np.argsort(ev, kind="stable")
    ev_sorted = ev[sorted_ev]

    def local(events: I64) -> I64:
        pos = np.searchsorted(ev_sorted, events)
        posc = np.minimum(pos, m - 1)
        return np.where(ev_sorted[posc] == events, sorted_ev[posc], -1)

    gpu = np.flatnonzero((role == _R_KERNEL) | (role == _R_COPY) | (role == _R_COLL))
    # launch edges
    if len(gpu):
        la = local(tr.launch_of[ev[gpu]])
        ok = la >= 0
        g, a = gpu[ok], la[ok]
        ok2 = n_t[snode[a]] <= n_t[snode[g]]
        g, a = g[ok2], a[ok2]
        x1[snode[g]] = snode[a]
        k1[snode[g]] = _X_LAUNCH
        edges["launch"] = len(g)
    # sync edges: the GPU op of the rank that ended last inside the call
    sync = np.flatnonzero(role == _R_SYNC)
    rank_gpu = gpu[tr.event_rank[ev[gpu]] == rank] if len(gpu) else gpu
    if len(sync) and len(rank_gpu):
        gend = ce[rank_gpu]
        o = np.argsort(gend, kind="stable")
        gend_s, g_s = gend[o], rank_gpu[o]
        k = np.searchsorted(gend_s, ce[sync], side="right") - 1
        ok = (k >= 0) & (gend_s[np.maximum(k, 0)] >= cs[sync])
        c, g = sync[ok], g_s[k[ok]]
        free = x1[enode[c]] < 0
        c, g = c[free], g[free]
        x1[enode[c]] = enode[g]
        k1[enode[c]] = _X_SYNC
        edges["sync"] = len(c)
    # event waits (inferred, see the module)
    edges["event_wait"] = _event_waits(tr, ctx.name_flags, ev, role, cs, ce, snode, enode, n_t, x2, local, lane_of)
    edges["join"] = sum(
        _joins(tr, rk, ev, role, ce, enode, n_t, prev_t, own_role, n_j, x2, lane_of)
        for rk in np.unique(tr.event_rank[ev]).tolist()
    )
    edges["wake"] = sum(
        _wakes(tr, rk, ev, role, cs, ce, parent, snode, enode, n_end, n_j, own_role, first, x2, lane_of)
        for rk in np.unique(tr.event_rank[ev]).tolist()
    )
    # collectives
    coll = np.flatnonzero(role == _R_COLL)
    if ctx.coll_peers and len(coll):
        for ci in coll.tolist():
            info = ctx.coll_peers.get(int(ev[ci]))
            if info is None:
                continue
            shortest, peers = info
            pl = local(np.array(peers, dtype=np.int64))
            pl = pl[pl >= 0]
            en = int(enode[ci])
            t_end = int(n_t[en])
            # the kernel's own lane edge weighs only the transfer
            if own[en] == ci:
                wc[en] = min(int(wc[en]), shortest)
            if not len(pl):
                continue
            ps = snode[pl]
            best = int(ps[np.argmax(n_t[ps])])
            w = min(shortest, t_end - int(n_t[best]))
            if w < 0:
                continue
            x1[en], w1[en], k1[en] = best, w, _X_COLL
            w1_item[en] = int(_item_key(np.array(_CAT["collective"]), np.array(tr.name[ev[ci]])))
            edges["collective"] += 1
    # ready, binding predecessor, residual
    prev_ready = np.empty(nn, dtype=np.int64)
    prev_ready[1:] = n_t[:-1]
    prev_ready[first] = s
    c0 = prev_ready + wc
    c1 = np.where(x1 >= 0, n_t[np.maximum(x1, 0)] + w1, _NEG)
    edges["event_wait"] += _late_starts(
        tr, ctx.first_wait, ev, role, ce, snode, enode, n_t, x2, lane_of, np.maximum(c0, c1)
    )
    c2 = np.where(x2 >= 0, n_t[np.maximum(x2, 0)], _NEG)
    stack = np.stack((c0, c1, c2))
    ready = stack.max(axis=0)
    # ties: the lane edge when it carries work, else the cross edge (it says why the lane resumed then)
    idle_chain = (~work).astype(np.int64)
    bind = np.argmax(np.stack((2 * c0 - idle_chain, 2 * c1, 2 * c2)), axis=0).astype(np.int64)
    r = n_t - ready
    if (
        r < 0
    ).any():  # an edge against recorded time would break the replay: never expected (the edges are built forward)
        raise AssertionError("critical path: an edge goes backwards in time")
    # residual items
    ev_name = tr.name[ev[n_j]].astype(np.int64)
    n_role = role[n_j]
    on_gpu_lane = (n_role == _R_KERNEL) | (n_role == _R_COPY) | (n_role == _R_COLL)
    idle_lab = np.where(on_gpu_lane, n_names + 1, n_names)
    r_cat = np.full(nn, _CAT["idle"], dtype=np.int64)
    r_lab = idle_lab.copy()
    chain = bind == 0
    sync_own = chain & (own_role == _R_SYNC)
    r_cat[sync_own], r_lab[sync_own] = _CAT["sync_wait"], own_name[sync_own]
    range_own = chain & (own_role == _R_RANGE)
    r_cat[range_own], r_lab[range_own] = _CAT["cpu_op"], own_name[range_own]
    coll_own = chain & (own_role == _R_COLL)
    r_cat[coll_own], r_lab[coll_own] = _CAT["collective"], own_name[coll_own]
    b1 = bind == 1
    lb = b1 & (k1 == _X_LAUNCH)
    r_cat[lb], r_lab[lb] = _CAT["launch"], n_names + 2
    sb = b1 & (k1 == _X_SYNC)
    r_cat[sb], r_lab[sb] = _CAT["sync_wait"], ev_name[sb]
    cb = b1 & (k1 == _X_COLL)
    r_cat[cb], r_lab[cb] = _CAT["collective"], ev_name[cb]
    r_item = np.where(r > 0, _item_key(r_cat, r_lab), -1)
    sink_nodes = np.array(
        [int(np.flatnonzero(n_lane == ln)[-1]) for ln in mine if np.any(n_lane == ln)], dtype=np.int64
    )
    if not len(sink_nodes):
        return None
    return _Graph(
        s=s,
        t=n_t,
        lane=n_lane,
        ev=ev[n_j],
        first=first,
        wc=wc,
        wc_item=wc_item,
        own=np.where(own >= 0, ev[np.maximum(own, 0)], -1),
        x1=x1,
        w1=w1,
        k1=k1,
        w1_item=w1_item,
        x2=x2,
        r=r,
        bind=bind,
        r_item=r_item,
        sink_nodes=sink_nodes,
        edges=edges,
    )


def _wakes(
    tr: Trace,
    rank: int,
    ev: I64,
    role: I64,
    cs: I64,
    ce: I64,
    parent: I64,
    snode: I64,
    enode: I64,
    n_end: I64,
    n_j: I64,
    own_role: I64,
    first: np.ndarray,
    x2: I64,
    lane_of: I64,
) -> int:
    """Wake edges: a CPU thread that resumes after an idle gap depends on the start of the innermost operation open
    at that time on another thread of the rank (the autograd engine's thread runs inside the main thread's
    ``backward``; a worker runs inside the call that handed it work), or, when none is open, on the latest end of
    an operation on another thread before it resumed (the hand-off). Fills ``x2``; returns how many."""
    cpu = (role == _R_CPU) | (role == _R_LAUNCH) | (role == _R_SYNC) | (role == _R_RANGE)
    cpu &= tr.event_rank[ev] == rank
    lanes = np.unique(lane_of[cpu])
    if len(lanes) < 2:
        return 0
    resume = np.flatnonzero((n_end == 0) & ((own_role == _R_NONE) | first) & cpu[n_j])
    if not len(resume):
        return 0
    q_ev = n_j[resume]
    q_t = cs[q_ev]
    q_lane = lane_of[q_ev]
    best = np.full(len(resume), -1, dtype=np.int64)  # enclosing event on another thread (latest start)
    best_t = np.full(len(resume), -1, dtype=np.int64)
    hand = np.full(len(resume), -1, dtype=np.int64)  # else the latest end before it
    hand_t = np.full(len(resume), -1, dtype=np.int64)
    for ln in lanes.tolist():
        evs = np.flatnonzero(cpu & (lane_of == ln))  # sorted by start, nested (parents inside the lane)
        other = q_lane != ln
        k = np.searchsorted(cs[evs], q_t, side="left") - 1  # started strictly before: no cycle of equal times
        cur = np.where(other & (k >= 0), evs[np.maximum(k, 0)], -1)
        for _ in range(64):  # up the nesting until an event still open at the query time
            walk = (cur >= 0) & (ce[np.maximum(cur, 0)] <= q_t)
            if not walk.any():
                break
            cur = np.where(walk, parent[np.maximum(cur, 0)], cur)
        cur = np.where((cur >= 0) & (ce[np.maximum(cur, 0)] > q_t), cur, -1)
        better = (cur >= 0) & (cs[np.maximum(cur, 0)] > best_t)
        best = np.where(better, cur, best)
        best_t = np.where(better, cs[np.maximum(cur, 0)], best_t)
        o = np.argsort(ce[evs], kind="stable")
        ends, owners = ce[evs][o], evs[o]
        k = np.searchsorted(ends, q_t, side="right") - 1
        ok = other & (k >= 0)
        cand_t = np.where(ok, ends[np.maximum(k, 0)], -1)
        better = ok & (cand_t > hand_t)
        hand = np.where(better, owners[np.maximum(k, 0)], hand)
        hand_t = np.where(better, cand_t, hand_t)
    use_enc = best >= 0
    x2[resume[use_enc]] = snode[best[use_enc]]
    use_hand = ~use_enc & (hand >= 0)
    x2[resume[use_hand]] = enode[hand[use_hand]]
    return int(use_enc.sum() + use_hand.sum())


def _joins(
    tr: Trace,
    rank: int,
    ev: I64,
    role: I64,
    ce: I64,
    enode: I64,
    n_t: I64,
    prev_t: I64,
    own_role: I64,
    n_j: I64,
    x2: I64,
    lane_of: I64,
) -> int:
    """Join edges: time an annotation range spends with nothing of its own thread inside it is the thread's own
    only if no other thread worked then; the node that ends such a span depends on the latest end of an operation
    on another thread of the rank inside the span (the main thread's ``backward`` range returns when the autograd
    thread's last operation ends). Fills ``x2``; returns how many."""
    cpu = (role == _R_CPU) | (role == _R_LAUNCH) | (role == _R_SYNC) | (role == _R_RANGE)
    cpu &= tr.event_rank[ev] == rank
    lanes = np.unique(lane_of[cpu])
    if len(lanes) < 2:
        return 0
    nodes = np.flatnonzero((own_role == _R_RANGE) & (x2 < 0) & cpu[n_j])
    if not len(nodes):
        return 0
    q_t, q_from, q_lane = n_t[nodes], prev_t[nodes], lane_of[n_j[nodes]]
    best = np.full(len(nodes), -1, dtype=np.int64)
    best_t = np.full(len(nodes), -1, dtype=np.int64)
    for ln in lanes.tolist():
        evs = np.flatnonzero(cpu & (lane_of == ln) & (role != _R_RANGE))  # operations, not other annotations
        if not len(evs):
            continue
        o = np.argsort(ce[evs], kind="stable")
        ends, owners = ce[evs][o], evs[o]
        k = np.searchsorted(ends, q_t, side="right") - 1
        kc = np.maximum(k, 0)
        ok = (q_lane != ln) & (k >= 0) & (ends[kc] > q_from) & (ends[kc] > best_t)
        best = np.where(ok, owners[kc], best)
        best_t = np.where(ok, ends[kc], best_t)
    hit = best >= 0
    x2[nodes[hit]] = enode[best[hit]]
    return int(hit.sum())


def _late_starts(
    tr: Trace,
    first_wait: dict[int, int],
    ev: I64,
    role: I64,
    ce: I64,
    snode: I64,
    enode: I64,
    n_t: I64,
    x2: I64,
    lane_of: I64,
    ready: I64,
) -> int:
    """Event waits the calls do not show (the wait issued from another thread than the launch, as DDP's
    communication hooks do): a GPU operation that started after both its launch and its stream's previous
    operation, on a rank that issued stream waits before its launch, waited for the operation of another stream of
    its device that ended last before it started (and after it was otherwise ready). Fills ``x2`` where no wait
    was found from the calls; returns how many."""
    if not first_wait:
        return 0
    gpu = np.flatnonzero((role == _R_KERNEL) | (role == _R_COPY) | (role == _R_COLL))
    if not len(gpu):
        return 0
    sn = snode[gpu]
    late = (x2[sn] < 0) & (n_t[sn] > ready[sn])
    launch = tr.launch_of[ev[gpu]]
    never = np.iinfo(np.int64).max
    ranks = tr.event_rank[ev[gpu]]
    waits_from = np.full(len(gpu), never, dtype=np.int64)
    for r, t in first_wait.items():
        waits_from[ranks == r] = t
    late &= (launch >= 0) & (tr.start_ns[np.maximum(launch, 0)] > waits_from)
    if not late.any():
        return 0
    dev = tr.event_device[ev[gpu]].astype(np.int64)
    # operations sorted by (device, end); each position's nearest earlier one on another lane
    order = np.lexsort((ce[gpu], dev))
    g_sorted, dev_sorted, end_sorted = gpu[order], dev[order], ce[gpu][order]
    lane_sorted = lane_of[g_sorted]
    new_run = np.ones(len(order), dtype=bool)
    new_run[1:] = (lane_sorted[1:] != lane_sorted[:-1]) | (dev_sorted[1:] != dev_sorted[:-1])
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(len(order)), 0))
    qi = np.flatnonzero(late)
    q_dev, q_t, q_lane = dev[qi], n_t[sn[qi]], lane_of[gpu[qi]]
    span = int(end_sorted.max()) - int(end_sorted.min()) + 2 if len(end_sorted) else 1
    base = int(end_sorted.min()) - 1
    key = (dev_sorted - dev_sorted.min()) * span + (end_sorted - base)
    q_key = (q_dev - dev_sorted.min()) * span + (np.clip(q_t, base, base + span - 1) - base)
    k = np.searchsorted(key, q_key, side="right") - 1
    same = (k >= 0) & (lane_sorted[np.maximum(k, 0)] == q_lane)
    k = np.where(same, run_start[np.maximum(k, 0)] - 1, k)
    kc = np.maximum(k, 0)
    ok = (k >= 0) & (dev_sorted[kc] == q_dev) & (lane_sorted[kc] != q_lane)
    ok &= (end_sorted[kc] <= q_t) & (end_sorted[kc] > ready[sn[qi]])
    x2[sn[qi[ok]]] = enode[g_sorted[kc[ok]]]
    return int(ok.sum())


def _event_waits(
    tr: Trace,
    name_flags: np.ndarray,
    ev: I64,
    role: I64,
    cs: I64,
    ce: I64,
    snode: I64,
    enode: I64,
    n_t: I64,
    x2: I64,
    local: object,
    lane_of: I64,
) -> int:
    """Fill ``x2`` with inferred event-wait edges; returns how many."""
    api = np.flatnonzero(role == _R_LAUNCH)
    if not len(api):
        return 0
    flags = name_flags[tr.name[ev[api]]]
    is_wait = (flags & 8) != 0
    if not is_wait.any():
        return 0
    is_rec = (flags & 16) != 0
    gpu = np.flatnonzero((role == _R_KERNEL) | (role == _R_COPY) | (role == _R_COLL))
    if not len(gpu):
        return 0
    launch_ev = tr.launch_of[ev[gpu]]
    has = launch_ev >= 0
    gpu, launch_ev = gpu[has], launch_ev[has]
    if not len(gpu):
        return 0
    l_start = tr.start_ns[launch_ev]
    l_thread = tr.lane[launch_ev]
    o = np.lexsort((l_start, l_thread))
    gpu, l_start, l_thread = gpu[o], l_start[o], l_thread[o]
    all_order = np.argsort(l_start, kind="stable")
    all_start, all_gpu = l_start[all_order], gpu[all_order]
    count = 0
    for wi in api[is_wait].tolist():
        th = int(tr.lane[ev[wi]])
        w_start = int(tr.start_ns[ev[wi]])
        lo = int(np.searchsorted(l_thread, th, side="left"))
        hi = int(np.searchsorted(l_thread, th, side="right"))
        k = lo + int(np.searchsorted(l_start[lo:hi], w_start, side="right"))
        if k >= hi:
            continue
        target = int(gpu[k])
        # the latest event record on this thread before the wait
        on_thread = api[(lane_of[api] == lane_of[wi]) & is_rec & (cs[api] <= cs[wi])]
        ref = int(tr.start_ns[ev[int(on_thread[-1])]]) if len(on_thread) else w_start
        q = int(np.searchsorted(all_start, ref, side="left")) - 1
        found = -1
        for step_back in range(64):
            if q - step_back < 0:
                break
            cand = int(all_gpu[q - step_back])
            if lane_of[cand] != lane_of[target]:
                found = cand
                break
        if found < 0:
            continue
        if ce[found] > cs[target]:
            continue
        sn = int(snode[target])
        en = int(enode[found])
        if x2[sn] < 0 or n_t[en] > n_t[int(x2[sn])]:
            x2[sn] = en
            count += 1
    return count


# ---- replay, walk, what-if ---------------------------------------------------------------------------------------
def _replay(g: _Graph, wc: I64, w1: I64, r: I64) -> I64:
    """Node times with the given weights and residuals: ``t'(n) = max over preds (t'(pred) + w) + r(n)``. Solved
    lane by lane with a max-plus scan, repeated while cross-lane hops still change times (a few passes on most
    steps); when that does not settle in :data:`_PASSES` passes (a program that synchronises after every kernel),
    one pass in topological order finishes it."""
    t: I64 = g.t.copy()
    lane_block = np.cumsum(g.first) - 1
    a = wc + r
    acc = np.cumsum(a)
    base = acc[g.first][lane_block] - a[g.first][lane_block]  # cumsum before each lane's first node
    big_a = acc - base
    blocks = int(lane_block[-1]) + 1
    for _ in range(_PASSES):
        c1 = np.where(g.x1 >= 0, t[np.maximum(g.x1, 0)] + w1, g.s)
        c2 = np.where(g.x2 >= 0, t[np.maximum(g.x2, 0)], g.s)
        c = np.maximum(c1, c2) + r
        c = np.where(g.first, np.maximum(c, g.s + a), c)
        v = c - big_a
        lo = int(v.min())
        span = int(v.max()) - lo + 1
        if span * blocks >= (1 << 62):  # pragma: no cover - spans beyond ~10^6 s: the ordered pass does it
            break
        run = np.maximum.accumulate(v - lo + lane_block * span) - lane_block * span + lo
        new: I64 = big_a + run
        if np.array_equal(new, t):
            return t
        t = new
    return _replay_ordered(g, wc, w1, r)


#: max-plus passes of :func:`_replay` before it switches to one ordered pass
_PASSES = 12


def _replay_ordered(g: _Graph, wc: I64, w1: I64, r: I64) -> I64:
    """The replay node by node, each after its predecessors (recorded time order; an equal-time predecessor later
    in that order is done first)."""
    nn = len(g.t)
    order = np.lexsort((np.arange(nn), g.t)).tolist()
    first = g.first.tolist()
    x1, x2 = g.x1.tolist(), g.x2.tolist()
    wcl, w1l, rl = wc.tolist(), w1.tolist(), r.tolist()
    s = g.s
    out = g.t.tolist()
    done = [False] * nn

    def preds(n: int) -> list[int]:
        ps = [] if first[n] else [n - 1]
        if x1[n] >= 0:
            ps.append(x1[n])
        if x2[n] >= 0:
            ps.append(x2[n])
        return ps

    def compute(n: int) -> None:
        best = s + wcl[n] if first[n] else out[n - 1] + wcl[n]
        if x1[n] >= 0:
            best = max(best, out[x1[n]] + w1l[n])
        if x2[n] >= 0:
            best = max(best, out[x2[n]])
        out[n] = best + rl[n]
        done[n] = True

    for n in order:
        if done[n]:
            continue
        stack = [n]
        seen = {n}
        while stack:
            top = stack[-1]
            todo = [p for p in preds(top) if not done[p] and p not in seen]
            if todo:
                stack.extend(todo)
                seen.update(todo)
                continue
            stack.pop()
            compute(top)
    return np.array(out, dtype=np.int64)


def _sink(g: _Graph, t: I64) -> int:
    return int(t[g.sink_nodes].max())


def _walk(
    trace: Trace, g: _Graph, segments: bool = True
) -> tuple[
    list[PathSegment], dict[str, int], tuple[tuple[str, str, int], ...], dict[tuple[str, str], tuple[int, int, int]]
]:
    """The binding chain from the sink back to the step start: its segments in time order (adjacent pieces of one
    item on one lane merged), its breakdown by category and its items, largest first. The walk jumps from lane to
    lane; each lane's run of lane edges is taken whole (vectorized)."""
    nn = len(g.t)
    idx = np.arange(nn, dtype=np.int64)
    stop = np.maximum.accumulate(np.where((g.bind != 0) | g.first, idx, -1))  # first nodes stop every lane's run
    node = int(g.sink_nodes[np.argmax(g.t[g.sink_nodes])])
    runs: list[I64] = []
    for _ in range(nn + 1):  # every jump goes to an earlier node in time order: at most nn of them
        m = int(stop[node])
        runs.append(idx[m : node + 1][::-1])
        b = int(g.bind[m])
        if b == 0:
            break
        node = int(g.x1[m]) if b == 1 else int(g.x2[m])
    else:  # pragma: no cover - a cycle of equal-time edges would be a bug in the graph
        raise AssertionError("critical path: the binding predecessors form a cycle")
    nodes = np.concatenate(runs)  # latest first
    t, r, bind = g.t[nodes], g.r[nodes], g.bind[nodes]
    own, evn, lane = g.own[nodes], g.ev[nodes], g.lane[nodes]
    r_key = g.r_item[nodes]
    r_cat = np.where(r_key >= 0, r_key >> 40, -1)
    own_residual = ((r_cat == _CAT["sync_wait"]) | (r_cat == _CAT["cpu_op"])) & (bind == 0)
    r_event = np.where(r_cat == _CAT["idle"], -1, np.where(own_residual, own, evn))
    w = np.where(bind == 0, g.wc[nodes], np.where(bind == 1, g.w1[nodes], 0))
    w_key = np.where(bind == 0, g.wc_item[nodes], g.w1_item[nodes])
    w_event = np.where(bind == 0, own, evn)
    # each node gives its residual (later) then its edge weight (earlier): interleave, then reverse to time order
    start = np.stack((t - r, t - r - w), axis=1).ravel()[::-1]
    dur = np.stack((r, w), axis=1).ravel()[::-1]
    key = np.stack((r_key, w_key), axis=1).ravel()[::-1]
    event = np.stack((r_event, w_event), axis=1).ravel()[::-1]
    lanes = np.repeat(lane, 2)[::-1]
    keep = dur > 0
    start, dur, key, event, lanes = start[keep], dur[keep], key[keep], event[keep], lanes[keep]
    if len(start):
        new = np.ones(len(start), dtype=bool)
        new[1:] = (
            (key[1:] != key[:-1])
            | (event[1:] != event[:-1])
            | (lanes[1:] != lanes[:-1])
            | (start[1:] != start[:-1] + dur[:-1])
        )
        heads = np.flatnonzero(new)
        dur = np.add.reduceat(dur, heads)
        start, key, event, lanes = start[heads], key[heads], event[heads], lanes[heads]
    labels: dict[int, tuple[str, str]] = {}
    n_names = len(trace.names)
    for k in np.unique(key).tolist():
        cat, lab = divmod(int(k), 1 << 40)
        labels[int(k)] = (CATEGORIES[cat], trace.names[lab] if lab < n_names else _SPECIAL[lab - n_names])
    lane_rank = trace.lane_rank.tolist()
    segs: list[PathSegment] = []
    if segments:  # built without the frozen dataclass' per-field object.__setattr__ (a third of the time)
        gc_was_on = gc.isenabled()
        gc.disable()  # hundreds of thousands of new objects, none in a cycle: no collection passes over them
        try:
            new_obj, set_attr, cls, append = object.__new__, object.__setattr__, PathSegment, segs.append
            rows = zip(start.tolist(), dur.tolist(), key.tolist(), event.tolist(), lanes.tolist(), strict=True)
            for st, d, k, e, ln in rows:
                seg_cat, seg_label = labels[k]
                seg = new_obj(cls)
                fields: dict[str, object] = {"start_ns": st, "dur_ns": d, "category": seg_cat, "label": seg_label}
                fields["event"], fields["lane"], fields["rank"] = e, ln, lane_rank[ln]
                set_attr(seg, "__dict__", fields)
                append(seg)
        finally:
            if gc_was_on:
                gc.enable()
    breakdown = {c: 0 for c in CATEGORIES}
    by_item: list[tuple[str, str, int]] = []
    first: dict[tuple[str, str], tuple[int, int, int]] = {}
    if len(key):
        uk, at, inv = np.unique(key, return_index=True, return_inverse=True)  # at: each item's first piece
        sums = np.zeros(len(uk), dtype=np.int64)
        np.add.at(sums, inv, dur)
        for item_key, ns, i in zip(uk.tolist(), sums.tolist(), at.tolist(), strict=True):
            cat_name, label = labels[int(item_key)]
            breakdown[cat_name] += int(ns)
            by_item.append((cat_name, label, int(ns)))
            first[(cat_name, label)] = (int(start[i]), int(event[i]), int(lanes[i]))
    by_item.sort(key=lambda x: (-x[2], x[0], x[1]))
    return segs, breakdown, tuple(by_item), first


def _item_of(trace: Trace, category: str, label: str) -> int:
    n_names = len(trace.names)
    lab = n_names + _SPECIAL.index(label) if label in _SPECIAL else trace.name_ids.get(label, -1)
    return _CAT[category] * (1 << 40) + lab if lab >= 0 else -2


def _what_if(trace: Trace, g: _Graph, step_ns: int, items: list[tuple[str, str, int]]) -> tuple[WhatIf, ...]:
    out: list[WhatIf] = []
    for cat, lab, ns in items:
        key = _item_of(trace, cat, lab)
        res = []
        for scale in (1, 0):  # 1: halved, 0: gone
            sel_w, sel_1, sel_r = g.wc_item == key, g.w1_item == key, g.r_item == key
            div = 2 if scale else 1 << 62  # floor halving, or nothing left
            wc = np.where(sel_w, g.wc // div, g.wc)
            w1 = np.where(sel_1, g.w1 // div, g.w1)
            r = np.where(sel_r, g.r // div, g.r)
            res.append(_sink(g, _replay(g, wc, w1, r)) - g.s)
        out.append(WhatIf(lab, cat, ns, step_ns, min(res[0], step_ns), min(res[1], step_ns)))
    return tuple(out)


def _windows(trace: Trace, ctx: _Ctx) -> list[tuple[int, int, str, int, int, str | None]]:
    """(rank, step index, step name, start, end, note) of every step; a rank without step ranges is one
    pseudo-step spanning its recorded work."""
    out: list[tuple[int, int, str, int, int, str | None]] = []
    have: set[int] = set()
    for st in find_steps(trace):
        have.add(st.rank)
        for i in range(len(st)):
            s = int(st.start_ns[i])
            out.append((st.rank, i, trace.event_name(int(st.events[i])), s, s + int(st.dur_ns[i]), None))
    used = ctx.role != _R_NONE
    for rk in sorted({int(x) for x in trace.lane_rank.tolist()} - have):
        sel = used & (trace.event_rank == rk)
        if not sel.any():
            continue
        s, e = int(trace.start_ns[sel].min()), int(trace.end_ns[sel].max())
        out.append((rk, 0, "", s, e, "no step ranges: the whole recording of the rank is one step"))
    out.sort(key=lambda w: (w[0], w[1]))
    return out


def critical_paths(
    trace: Trace,
    *,
    step: int | None = None,
    rank: int | None = None,
    what_if: bool = True,
    segments: bool = True,
) -> list[StepPath]:
    """The critical path of every step (or of step ``step``, 0-based per rank) of every rank (or of ``rank``);
    what-ifs for the top :data:`WHAT_IF_TOP` items of each path unless ``what_if`` is False; ``segments=False``
    leaves ``segments`` empty (for callers that need only the totals, twice as fast). See the module. Results are
    kept with the trace: asking again costs nothing."""
    key = (step, rank, what_if, segments)
    cached = _RESULTS.setdefault(trace, {})
    if key not in cached:
        cached[key] = tuple(_critical_paths(trace, step, rank, what_if, segments))
    return list(cached[key])


#: critical_paths' results per trace and arguments
_RESULTS: weakref.WeakKeyDictionary[Trace, dict[tuple[int | None, int | None, bool, bool], tuple[StepPath, ...]]] = (
    weakref.WeakKeyDictionary()
)


def _critical_paths(trace: Trace, step: int | None, rank: int | None, what_if: bool, segments: bool) -> list[StepPath]:
    ctx = _context(trace)
    out: list[StepPath] = []
    for rk, i, name, s, e, note in _windows(trace, ctx):
        if (rank is not None and rk != rank) or (step is not None and i != step):
            continue
        notes = tuple(x for x in (note, ctx.coll_note) if x)
        g = _build_graph(ctx, rk, s, e)
        if g is None:
            out.append(StepPath(rk, i, name, s, e - s, 0, (), {c: 0 for c in CATEGORIES}, (), (), notes, {}))
            continue
        segs, breakdown, by_item, first = _walk(trace, g, segments)
        length = _sink(g, g.t) - s
        wi: tuple[WhatIf, ...] = ()
        if what_if:
            top = [it for it in by_item if it[0] != "idle"][:WHAT_IF_TOP]
            wi = _what_if(trace, g, length, list(top))
        out.append(StepPath(rk, i, name, s, e - s, length, tuple(segs), breakdown, by_item, wi, notes, g.edges, first))
    return out


def replay_matches(trace: Trace) -> bool:
    """Whether replaying every step's graph with its recorded weights gives back every recorded time (a check)."""
    ctx = _context(trace)
    for rk, _i, _name, s, e, _note in _windows(trace, ctx):
        g = _build_graph(ctx, rk, s, e)
        if g is not None and not np.array_equal(_replay(g, g.wc, g.w1, g.r), g.t):
            return False
    return True
