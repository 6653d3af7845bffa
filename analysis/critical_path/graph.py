"""Building one step's critical-path graph: nodes per lane, lane-edge weights, launch / sync / collective edges,
the inferred edges (:mod:`~gputop_trace.analysis.critical_path.edges`), binding predecessors and residuals. See
:mod:`gputop_trace.analysis.critical_path.path`. Times int64 ns, model time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gputop_trace.analysis.critical_path.context import PathContext, events_in_window
from gputop_trace.analysis.critical_path.edges import event_wait_edges, join_edges, late_start_edges, wake_edges
from gputop_trace.analysis.critical_path.model import (
    CATEGORY_CODE,
    CROSS_COLL,
    CROSS_LAUNCH,
    CROSS_SYNC,
    EDGE_NAMES,
    NEG_NS,
    ROLE_CATEGORY,
    ROLE_COLL,
    ROLE_COPY,
    ROLE_KERNEL,
    ROLE_NONE,
    ROLE_RANGE,
    ROLE_SYNC,
    StepGraph,
    item_key,
)
from gputop_trace.analysis.enclosing import nesting_parents
from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.kinds import LaneKind
from gputop_trace.model.trace import Trace


def _ix(n: int) -> type[np.signedinteger[Any]]:
    """The index dtype for values below ``n``: int32 where they fit (half the memory of int64)."""
    return np.int32 if n < (1 << 31) - 1 else np.int64


def _lanes(ctx: PathContext, rank: int) -> tuple[list[int], list[int]]:
    """The step rank's CPU threads and GPU streams, and those of the graph (the other ranks' too when collectives
    join the ranks)."""
    tr = ctx.trace
    kinds = (LaneKind.CPU_THREAD, LaneKind.GPU_STREAM)
    mine = [i for i, ln in enumerate(tr.lanes) if ln.rank == rank and ln.kind in kinds]
    peer_lanes: list[int] = []
    if ctx.coll_peers:
        peer_lanes = [i for i, ln in enumerate(tr.lanes) if ln.rank != rank and ln.kind in kinds]
    return mine, mine + peer_lanes


@dataclass
class _Nodes:
    """The events of a step's graph (clipped to the step, ns) and their nodes: 2 per event, lane blocks in lane
    order, within a lane sorted by (t, end before start, nesting order)."""

    ev: I64  # event index per graph event
    role: np.ndarray  # per graph event (int8)
    cs: I64  # clipped start per graph event
    ce: I64  # clipped end per graph event
    lane_of: np.ndarray  # lane per graph event
    parent: I64  # nesting parent per graph event (graph event index, -1 none)
    n_t: I64  # per node: its time
    n_lane: np.ndarray  # per node: its lane
    n_end: np.ndarray  # per node: True for an event's end
    n_j: np.ndarray  # per node: its graph event
    snode: np.ndarray  # per graph event: its start node
    enode: np.ndarray  # per graph event: its end node
    first: np.ndarray  # per node: the first of its lane


def _nodes(ctx: PathContext, ev: I64, s: int, e: int) -> _Nodes:
    tr = ctx.trace
    role = ctx.role[ev]
    cs = np.maximum(tr.start_ns[ev], s)
    ce = np.minimum(tr.end_ns[ev], e)
    m = len(ev)
    nn = 2 * m
    ix = _ix(nn)
    lane_of = tr.lane[ev].astype(_ix(len(tr.lanes)))
    # nesting parents per lane (events of a lane are contiguous and sorted by start, longest first)
    parent = np.full(m, -1, dtype=np.int64)
    brk = np.flatnonzero(np.diff(lane_of)) + 1
    bounds = np.concatenate(([0], brk, [m]))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        p = nesting_parents(cs[a:b], ce[a:b])
        parent[a:b] = np.where(p >= 0, p + a, -1)
    # sort keys, each as small as its values allow (the order is total: any sort gives the same one)
    j = np.arange(m, dtype=ix)
    tie = np.concatenate((j, -j))
    start_key = np.concatenate((np.ones(m, dtype=np.int8), np.zeros(m, dtype=np.int8)))  # end before start
    n_t = np.concatenate((cs, ce))
    n_lane = np.concatenate((lane_of, lane_of))
    order = np.lexsort((tie, start_key, n_t, n_lane))
    del tie, start_key, j
    n_t = n_t[order]
    n_lane = n_lane[order]
    n_end = order >= m
    node_of = np.empty(nn, dtype=ix)
    node_of[order] = np.arange(nn, dtype=ix)
    n_j = order.astype(ix)
    del order
    n_j[n_end] -= m
    first = np.ones(nn, dtype=bool)
    first[1:] = n_lane[1:] != n_lane[:-1]
    return _Nodes(ev, role, cs, ce, lane_of, parent, n_t, n_lane, n_end, n_j, node_of[:m], node_of[m:], first)


@dataclass
class _LaneEdges:
    """Per node: the lane edge into it (weights ns)."""

    own: np.ndarray  # graph event owning the span before the node (-1 none)
    own_role: np.ndarray  # its role (ROLE_NONE none)
    own_name: np.ndarray  # its name id (0 none)
    prev_t: I64  # time of the previous node of the lane (S for a lane's first)
    work: np.ndarray  # the span is work (not idle, not a wait, not a range's own time)
    wc: I64  # the lane edge's weight
    wc_item: I64  # its item key (-1 none)


def _lane_edges(tr: Trace, nd: _Nodes, s: int) -> _LaneEdges:
    nn = len(nd.n_t)
    # owner of the span after each node: the event of the lane's latest start node so far, or its nearest enclosing
    # event still open when the span ends (with nesting: the event itself after its start, its parent after its
    # end; an event that outlives the one it began in, a profiler range that ends after its operator, keeps the
    # span after that one ends, and the spans after its own end go to an event still open, not one that ended)
    idx = np.arange(nn, dtype=np.int64)
    last_start = np.maximum.accumulate(np.where(nd.n_end, -1, idx))
    lane_head = np.maximum.accumulate(np.where(nd.first, idx, 0))
    last_start[last_start < lane_head] = -1  # no start of this lane yet (a zero-length event's end sorts first)
    del lane_head
    own = np.empty(nn, dtype=nd.n_j.dtype)
    own[0] = -1
    own[1:] = np.where(last_start[:-1] >= 0, nd.n_j[np.maximum(last_start[:-1], 0)], -1)
    del idx, last_start
    after = own[1:]  # a view: the span before node i runs from node i-1 to node i
    while True:
        stale = np.flatnonzero((after >= 0) & (nd.ce[np.maximum(after, 0)] < nd.n_t[1:]))
        if not len(stale):
            break
        after[stale] = nd.parent[after[stale]]
    own[nd.first] = -1
    prev_t = np.empty(nn, dtype=np.int64)
    prev_t[1:] = nd.n_t[:-1]
    prev_t[nd.first] = s
    has = own >= 0
    own_c = np.maximum(own, 0)
    own_role = np.where(has, nd.role[own_c], np.int8(ROLE_NONE)).astype(np.int8)
    own_name = np.where(has, tr.name[nd.ev[own_c]], 0)
    del own_c, has
    work = (own_role != ROLE_NONE) & (own_role != ROLE_SYNC) & (own_role != ROLE_RANGE)
    wc = np.subtract(nd.n_t, prev_t)
    wc[~work] = 0
    own_cat = np.array([ROLE_CATEGORY.get(x, 0) for x in range(8)], dtype=np.int64)[own_role]
    own_cat <<= 40  # the item key: category * 2**40 + label
    own_cat += own_name
    own_cat[~work] = -1
    return _LaneEdges(own, own_role, own_name, prev_t, work, wc, own_cat)


def build_step_graph(ctx: PathContext, rank: int, s: int, e: int) -> StepGraph | None:
    """The graph of the step ``[s, e]`` (ns) of ``rank``; None when it has no event. See the module."""
    tr = ctx.trace
    mine, lanes = _lanes(ctx, rank)
    ev = events_in_window(ctx, lanes, s, e)
    if not len(ev):
        return None
    nd = _nodes(ctx, ev, s, e)
    le = _lane_edges(tr, nd, s)
    x = _cross_edges(ctx, rank, nd, le)
    ready, bind = _binding(ctx, s, nd, le, x)
    r = np.subtract(nd.n_t, ready, out=ready)
    del ready
    if (r < 0).any():  # an edge against recorded time would break the replay: never expected (edges go forward)
        raise AssertionError("critical path: an edge goes backwards in time")
    r_item = _residual_items(tr, nd, le, x, bind, r)
    sink_nodes = np.array(
        [int(np.flatnonzero(nd.n_lane == ln)[-1]) for ln in mine if np.any(nd.n_lane == ln)], dtype=np.int64
    )
    if not len(sink_nodes):
        return None
    own_ev = nd.ev[np.maximum(le.own, 0)].astype(nd.n_j.dtype)
    own_ev[le.own < 0] = -1
    return StepGraph(
        s=s,
        t=nd.n_t,
        lane=nd.n_lane,
        ev=nd.ev[nd.n_j].astype(nd.n_j.dtype),
        first=nd.first,
        wc=le.wc,
        wc_item=le.wc_item,
        own=own_ev,
        x1=x.x1,
        w1=x.w1,
        k1=x.k1,
        w1_item=x.w1_item,
        x2=x.x2,
        r=r,
        bind=bind,
        r_item=r_item,
        sink_nodes=sink_nodes,
        edges=x.edges,
    )


@dataclass
class _Cross:
    """Per node: its cross-lane predecessors (node indices, -1 none; weights ns) and the edge counts."""

    x1: np.ndarray  # launch / sync / collective predecessor
    w1: I64
    k1: np.ndarray  # its _X_ kind (int8)
    w1_item: I64
    x2: np.ndarray  # event-wait / join / wake predecessor
    edges: dict[str, int]


def _cross_edges(ctx: PathContext, rank: int, nd: _Nodes, le: _LaneEdges) -> _Cross:
    tr = ctx.trace
    ev, role, cs, ce, snode, enode, n_t = nd.ev, nd.role, nd.cs, nd.ce, nd.snode, nd.enode, nd.n_t
    m, nn = len(ev), len(n_t)
    edges = {k: 0 for k in EDGE_NAMES}
    x1 = np.full(nn, -1, dtype=nd.n_j.dtype)
    w1 = np.zeros(nn, dtype=np.int64)
    k1 = np.full(nn, -1, dtype=np.int8)
    w1_item = np.full(nn, -1, dtype=np.int64)
    x2 = np.full(nn, -1, dtype=nd.n_j.dtype)
    sorted_ev = np.argsort(ev, kind="stable")
    ev_sorted = ev[sorted_ev]

    def local(events: I64) -> I64:
        pos = np.searchsorted(ev_sorted, events)
        posc = np.minimum(pos, m - 1)
        return np.where(ev_sorted[posc] == events, sorted_ev[posc], -1)

    gpu = np.flatnonzero((role == ROLE_KERNEL) | (role == ROLE_COPY) | (role == ROLE_COLL))
    # launch edges
    if len(gpu):
        la = local(tr.launch_of[ev[gpu]])
        ok = la >= 0
        g, a = gpu[ok], la[ok]
        ok2 = n_t[snode[a]] <= n_t[snode[g]]
        g, a = g[ok2], a[ok2]
        x1[snode[g]] = snode[a]
        k1[snode[g]] = CROSS_LAUNCH
        edges["launch"] = len(g)
    # sync edges: the GPU op of the rank that ended last inside the call
    sync = np.flatnonzero(role == ROLE_SYNC)
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
        k1[enode[c]] = CROSS_SYNC
        edges["sync"] = len(c)
    # event waits (inferred, see the module)
    lane_of, n_j = nd.lane_of, nd.n_j
    edges["event_wait"] = event_wait_edges(tr, ctx.name_flags, ev, role, cs, ce, snode, enode, n_t, x2, local, lane_of)
    edges["join"] = sum(
        join_edges(tr, rk, ev, role, ce, enode, n_t, le.prev_t, le.own_role, n_j, x2, lane_of)
        for rk in distinct(tr.event_rank[ev]).tolist()
    )
    edges["wake"] = sum(
        wake_edges(tr, rk, ev, role, cs, ce, nd.parent, snode, enode, nd.n_end, n_j, le.own_role, nd.first, x2, lane_of)
        for rk in distinct(tr.event_rank[ev]).tolist()
    )
    x = _Cross(x1, w1, k1, w1_item, x2, edges)
    _collective_edges(ctx, nd, le, x, local)
    return x


def _collective_edges(ctx: PathContext, nd: _Nodes, le: _LaneEdges, x: _Cross, local: Callable[[I64], I64]) -> None:
    """A collective kernel's end waits for the start of its matched kernels on the other ranks; its own lane edge
    weighs only the transfer (the instance's shortest duration, ns)."""
    coll = np.flatnonzero(nd.role == ROLE_COLL)
    if not ctx.coll_peers or not len(coll):
        return
    tr, ev, n_t, own, wc = ctx.trace, nd.ev, nd.n_t, le.own, le.wc
    for ci in coll.tolist():
        info = ctx.coll_peers.get(int(ev[ci]))
        if info is None:
            continue
        shortest, peers = info
        pl = local(np.array(peers, dtype=np.int64))
        pl = pl[pl >= 0]
        en = int(nd.enode[ci])
        t_end = int(n_t[en])
        # the kernel's own lane edge weighs only the transfer
        if own[en] == ci:
            wc[en] = min(int(wc[en]), shortest)
        if not len(pl):
            continue
        ps = nd.snode[pl]
        best = int(ps[np.argmax(n_t[ps])])
        w = min(shortest, t_end - int(n_t[best]))
        if w < 0:
            continue
        x.x1[en], x.w1[en], x.k1[en] = best, w, CROSS_COLL
        x.w1_item[en] = int(item_key(np.array(CATEGORY_CODE["collective"]), np.array(tr.name[ev[ci]])))
        x.edges["collective"] += 1


def _binding(ctx: PathContext, s: int, nd: _Nodes, le: _LaneEdges, x: _Cross) -> tuple[I64, np.ndarray]:
    """Each node's ready time (ns) and binding predecessor (0 lane edge, 1 x1, 2 x2; int8); adds the late-start
    event waits to ``x`` (they need the time each GPU operation was otherwise ready)."""
    n_t = nd.n_t
    c0 = le.prev_t  # the lane edge's candidate, in place of prev_t (no longer needed)
    c0 += le.wc
    c1 = n_t[np.maximum(x.x1, 0)]
    c1 += x.w1
    c1[x.x1 < 0] = NEG_NS
    ready = np.maximum(c0, c1)
    x.edges["event_wait"] += late_start_edges(
        ctx.trace, ctx.first_wait, nd.ev, nd.role, nd.ce, nd.snode, nd.enode, n_t, x.x2, nd.lane_of, ready
    )
    c2 = n_t[np.maximum(x.x2, 0)]
    c2[x.x2 < 0] = NEG_NS
    np.maximum(ready, c2, out=ready)
    # ties: the lane edge when it carries work, else the cross edge (it says why the lane resumed then);
    # the first of the largest of (2 c0 - idle chain, 2 c1, 2 c2)
    c0 *= 2
    c0 -= ~le.work
    one = c1 >= c2
    np.maximum(c1, c2, out=c1)
    del c2
    c1 *= 2
    cross = c1 > c0
    del c1, c0
    bind = 2 - one.astype(np.int8)
    del one
    bind[~cross] = 0
    return ready, bind


def _residual_items(tr: Trace, nd: _Nodes, le: _LaneEdges, x: _Cross, bind: np.ndarray, r: I64) -> I64:
    """The item key of each node's residual (-1 where it is 0)."""
    n_names = len(tr.names)
    nn = len(nd.n_t)
    n_role = nd.role[nd.n_j]
    on_gpu_lane = (n_role == ROLE_KERNEL) | (n_role == ROLE_COPY) | (n_role == ROLE_COLL)
    del n_role
    r_cat = np.full(nn, CATEGORY_CODE["idle"], dtype=np.int64)
    r_lab = np.where(on_gpu_lane, n_names + 1, n_names).astype(np.int64)
    del on_gpu_lane
    chain = bind == 0
    own_role, own_name = le.own_role, le.own_name
    for role, cat in ((ROLE_SYNC, "sync_wait"), (ROLE_RANGE, "cpu_op"), (ROLE_COLL, "collective")):
        sel = chain & (own_role == role)
        r_cat[sel], r_lab[sel] = CATEGORY_CODE[cat], own_name[sel]
    del chain
    b1 = bind == 1
    lb = b1 & (x.k1 == CROSS_LAUNCH)
    r_cat[lb], r_lab[lb] = CATEGORY_CODE["launch"], n_names + 2
    del lb
    ev_name = tr.name[nd.ev[nd.n_j]]
    for kind, cat in ((CROSS_SYNC, "sync_wait"), (CROSS_COLL, "collective")):
        sel = b1 & (x.k1 == kind)
        r_cat[sel], r_lab[sel] = CATEGORY_CODE[cat], ev_name[sel]
    del ev_name, b1
    r_cat <<= 40  # the item key: category * 2**40 + label
    r_cat += r_lab
    del r_lab
    r_cat[r <= 0] = -1
    return r_cat
