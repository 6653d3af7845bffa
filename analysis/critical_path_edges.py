"""The inferred cross-lane edges of a step's critical-path graph: wakes, joins, event waits seen on the calls and
late starts (event waits issued from another thread). See :mod:`gputop_trace.analysis.critical_path`. Times int64
ns, model time."""

from __future__ import annotations

import numpy as np

from gputop_trace.analysis.critical_path_model import (
    _R_COLL,
    _R_COPY,
    _R_CPU,
    _R_KERNEL,
    _R_LAUNCH,
    _R_NONE,
    _R_RANGE,
    _R_SYNC,
)
from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.trace import Trace


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
    lanes = distinct(lane_of[cpu])
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
    lanes = distinct(lane_of[cpu])
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
