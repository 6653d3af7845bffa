"""The inferred cross-lane edges of a step's critical-path graph: wakes, joins, event waits seen on the calls and
late starts (event waits issued from another thread). See :mod:`gputop_trace.analysis.critical_path.path`. Times int64
ns, model time."""

from __future__ import annotations

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
from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.trace import Trace


def wake_edges(
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
    cpu = (role == ROLE_CPU) | (role == ROLE_LAUNCH) | (role == ROLE_SYNC) | (role == ROLE_RANGE)
    cpu &= tr.event_rank[ev] == rank
    lanes = distinct(lane_of[cpu])
    if len(lanes) < 2:
        return 0
    resume = np.flatnonzero((n_end == 0) & ((own_role == ROLE_NONE) | first) & cpu[n_j])
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


def join_edges(
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
    cpu = (role == ROLE_CPU) | (role == ROLE_LAUNCH) | (role == ROLE_SYNC) | (role == ROLE_RANGE)
    cpu &= tr.event_rank[ev] == rank
    lanes = distinct(lane_of[cpu])
    if len(lanes) < 2:
        return 0
    nodes = np.flatnonzero((own_role == ROLE_RANGE) & (x2 < 0) & cpu[n_j])
    if not len(nodes):
        return 0
    q_t, q_from, q_lane = n_t[nodes], prev_t[nodes], lane_of[n_j[nodes]]
    best = np.full(len(nodes), -1, dtype=np.int64)
    best_t = np.full(len(nodes), -1, dtype=np.int64)
    for ln in lanes.tolist():
        evs = np.flatnonzero(cpu & (lane_of == ln) & (role != ROLE_RANGE))  # operations, not other annotations
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


def late_start_edges(
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
    gpu = np.flatnonzero((role == ROLE_KERNEL) | (role == ROLE_COPY) | (role == ROLE_COLL))
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


def event_wait_edges(
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
    """Fill ``x2`` with inferred event-wait edges; returns how many were set (an edge that replaces an earlier one
    of the same node counts again). Whole-array passes, one per thread or lane of the waits: a trace of millions of
    calls has hundreds of thousands of waits (``tests/unit/test_critical_path_event_waits.py`` holds the
    one-wait-at-a-time definition this equals)."""
    api = np.flatnonzero(role == ROLE_LAUNCH)
    if not len(api):
        return 0
    flags = name_flags[tr.name[ev[api]]]
    is_wait = (flags & 8) != 0
    if not is_wait.any():
        return 0
    is_rec = (flags & 16) != 0
    gpu = np.flatnonzero((role == ROLE_KERNEL) | (role == ROLE_COPY) | (role == ROLE_COLL))
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
    waits = api[is_wait]  # in the order the edges are set
    k = _next_launched(l_thread, l_start, tr.lane[ev[waits]], tr.start_ns[ev[waits]])
    ok = k >= 0
    waits, target = waits[ok], gpu[k[ok]]
    ref = _latest_record(tr, ev, cs, lane_of, api[is_rec], waits)
    found = _launched_before_on_another_stream(all_start, lane_of[all_gpu], ref, lane_of[target])
    ok = found >= 0
    target, found = target[ok], all_gpu[found[ok]]
    ok = ce[found] <= cs[target]
    return _keep_latest(snode[target[ok]], enode[found[ok]], n_t, x2)


def _next_launched(l_thread: np.ndarray, l_start: I64, th: np.ndarray, w_start: I64) -> I64:
    """For each wait (its thread ``th``, start ``w_start``): the position, in the launches sorted by (thread,
    start), of the first launch from that thread that started after it; -1 when none did."""
    k = np.full(len(th), -1, dtype=np.int64)
    for t in distinct(th).tolist():
        lo = int(np.searchsorted(l_thread, t, side="left"))
        hi = int(np.searchsorted(l_thread, t, side="right"))
        if lo == hi:
            continue
        sel = np.flatnonzero(th == t)
        kk = lo + np.searchsorted(l_start[lo:hi], w_start[sel], side="right")
        k[sel] = np.where(kk < hi, kk, -1)
    return k


def _latest_record(tr: Trace, ev: I64, cs: I64, lane_of: I64, rec: I64, waits: I64) -> I64:
    """For each wait: the start (ns) of the event-record call on its lane that comes last in node order among those
    that started no later than the wait, else the wait's own start."""
    ref = tr.start_ns[ev[waits]].astype(np.int64)
    w_lane = lane_of[waits]
    for ln in distinct(w_lane).tolist():
        r = rec[lane_of[rec] == ln]
        if not len(r):
            continue
        o = np.argsort(cs[r], kind="stable")
        last = np.maximum.accumulate(r[o])  # the latest node among the first j+1 records by start
        sel = np.flatnonzero(w_lane == ln)
        j = np.searchsorted(cs[r][o], cs[waits[sel]], side="right") - 1
        got = j >= 0
        ref[sel[got]] = tr.start_ns[ev[last[j[got]]]]
    return ref


#: how far back from the last launch before the record the search for another stream's operation goes
_STEP_BACK = 64


def _launched_before_on_another_stream(all_start: I64, all_lane: I64, ref: I64, target_lane: I64) -> I64:
    """For each wait: the position (in launch order, ``all_start`` ascending) of the last operation launched before
    ``ref`` whose lane is not ``target_lane``, looking back at most :data:`_STEP_BACK` launches; -1 when none.
    Launches on the target's lane right before ``ref`` form a run of equal lanes: the answer is just before it."""
    q = np.searchsorted(all_start, ref, side="left") - 1
    n = len(all_lane)
    brk = np.ones(n, dtype=bool)
    brk[1:] = all_lane[1:] != all_lane[:-1]
    run_start = np.maximum.accumulate(np.where(brk, np.arange(n), 0))
    qc = np.maximum(q, 0)
    pos = np.where(all_lane[qc] == target_lane, run_start[qc] - 1, qc)
    ok = (q >= 0) & (pos >= 0) & (qc - pos < _STEP_BACK)
    return np.where(ok, pos, -1)


def _keep_latest(sn: I64, en: I64, n_t: I64, x2: I64) -> int:
    """Set ``x2[sn[i]] = en[i]`` in order, each only when it ends later (``n_t``) than what ``x2`` holds (none: -1);
    returns how many were set. Per node the sets that happen are the strict running maxima of ``n_t[en]``."""
    m = len(sn)
    if not m:
        return 0
    v = n_t[en]
    cur = x2[sn]
    low = int(v.min()) - 1
    init = np.where(cur >= 0, n_t[np.maximum(cur, 0)], low)
    both = np.concatenate([v, init])
    o = np.argsort(both, kind="stable")
    dense = np.empty(len(both), dtype=np.int64)
    dense[o] = np.cumsum(np.concatenate([[0], both[o][1:] != both[o][:-1]]))
    span = int(dense.max()) + 1
    g_o = np.argsort(sn, kind="stable")
    sn_s = sn[g_o]
    g = np.cumsum(np.concatenate([[0], sn_s[1:] != sn_s[:-1]]))
    rv = dense[:m][g_o]
    key = g * span + rv
    prev = np.empty(m, dtype=np.int64)
    prev[0] = -1
    np.maximum.accumulate(key[:-1], out=prev[1:])
    base = g * span
    best = np.maximum(np.where(prev >= base, prev - base, -1), dense[m:][g_o])
    improve = rv > best
    idx = np.flatnonzero(improve)
    if len(idx):
        gi = g[idx]
        last = idx[np.concatenate([gi[1:] != gi[:-1], [True]])]
        x2[sn_s[last]] = en[g_o][last]
    return len(idx)
